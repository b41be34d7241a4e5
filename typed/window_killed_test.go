package typed_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// killedJobEnv marks a process of TestWindowSharedKilled's job: the
// directory where it writes its pid.
const killedJobEnv = "MPGO_TEST_WINDOW_KILLED"

// killedJobMain is a process of the job: every rank makes a shared
// window, stores into it, and then its process kills itself with
// SIGKILL, which runs no cleanup at all.
func killedJobMain(dir string) int {
	mpgo.Join(func(c *comm.Comm) error { //nolint:errcheck // the process dies inside
		_, part, err := typed.AllocSharedWindow[byte](c, 1<<20)
		if err != nil {
			return err
		}
		for i := range part {
			part[i] = 1
		}
		pid := strconv.Itoa(os.Getpid()) // written once the window is mapped and filled
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(c.Rank())), []byte(pid), 0o600); err != nil {
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		return syscall.Kill(os.Getpid(), syscall.SIGKILL)
	})
	return 1
}

// mpgoShmNames lists what /dev/shm holds of mpgo's (by name).
func mpgoShmNames(t *testing.T) []string {
	t.Helper()
	es, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	var names []string
	for _, e := range es {
		if strings.Contains(e.Name(), "mpgo") {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestWindowSharedKilled: processes with a shared window mapped, killed
// with SIGKILL, leave nothing behind: no name in /dev/shm (the segment
// never had one), and no process (the memory of an anonymous memory file
// goes with the last process that maps it).
func TestWindowSharedKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("shared windows across processes need the shared-memory backend: Linux")
	}
	before := mpgoShmNames(t)
	dir := t.TempDir()
	out, err := underMPIExec(t, 3, killedJobEnv+"="+dir, "MPGO_RANKS_PER_PROC=2")
	if err == nil || !strings.Contains(string(out), "signal 9") {
		t.Fatalf("the killed job ended with %v, want its processes killed:\n%s", err, out)
	}
	for r := range 6 {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(r)))
		if err != nil {
			t.Fatalf("rank %d wrote no pid (%v):\n%s", r, err, out)
		}
		pid, _ := strconv.Atoi(string(b))
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("rank %d's process %d: %v, want it gone", r, pid, err)
		}
	}
	if after := mpgoShmNames(t); len(after) != len(before) {
		t.Errorf("/dev/shm: %v after the job, %v before", after, before)
	}
}
