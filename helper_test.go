package mpgo_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// helperEnv names, in the environment of a process a test starts under a
// launcher, the failing job this test binary runs instead of its tests
// (helperMain); helperPIDs names a directory where each of its processes
// writes its process id, in a file named after its rank.
const (
	helperEnv  = "MPGO_TEST_HELPER"
	helperPIDs = "MPGO_TEST_PIDS"
)

// helperMain runs, under mpgo.Main, a job of three or more processes
// that fails as mode says once every rank passed a barrier, while the
// others wait for the culprit, and exits:
//
//	fail   rank 2 returns an error
//	panic  rank 2 panics
//	exit   rank 1's process exits (os.Exit)
//	kill   rank 1's process is killed (SIGKILL)
func helperMain(mode string) {
	culprit := 2
	if mode == "exit" || mode == "kill" {
		culprit = 1
	}
	mpgo.Main(func(w *comm.Comm) error {
		if dir := os.Getenv(helperPIDs); dir != "" {
			pid := strconv.Itoa(os.Getpid())
			if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(w.Rank())), []byte(pid), 0o644); err != nil {
				return err
			}
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if w.Rank() == culprit {
			time.Sleep(100 * time.Millisecond) // the others wait by now
			switch mode {
			case "fail":
				return errors.New("helper: rank 2 fails on purpose")
			case "panic":
				panic("helper: rank 2 panics on purpose")
			case "exit":
				os.Exit(3)
			case "kill":
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			return errors.New("helper: unknown mode " + mode)
		}
		_, err := w.Recv(make([]byte, 8), comm.Byte, culprit, 0)
		return err
	})
}
