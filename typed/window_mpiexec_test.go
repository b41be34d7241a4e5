package typed_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// Windows between real processes: this test binary, started by MPICH's
// mpiexec, joins the job (over the shared-memory backend, TCP, or the
// RDMA backend's tcp and shm providers when built with -tags rdma) and
// runs the window tests' rank functions in each process: shared windows
// (one segment mapped by every process) over the shared-memory backend,
// and their refusal, on every rank, elsewhere.

// windowJobEnv marks a process of TestWindowUnderMPIExec's job.
const windowJobEnv = "MPGO_TEST_WINDOW_JOB"

// windowJobMain is a process of the job: it runs the rank functions on its
// ranks and prints a line per rank.
func windowJobMain() int {
	bodies := []func(c *comm.Comm) error{
		fencePutGet(makers[1].make),
		accumulateReference,
		sumBody(int64(1), typed.Sum[int64], func(v int64) int { return int(v) }),
		sumBody(1.0, typed.Sum[float64], func(v float64) int { return int(v) }),
		counterBody(300),
		casMutex,
		passiveBusy,
		pscwRing,
		passiveTarget(jobWindowPath()),
	}
	// Shared windows: one segment over the shared-memory backend, refused
	// on every rank over TCP (and where there is no such backend).
	if os.Getenv("MPGO_SHM") == "0" || runtime.GOOS != "linux" {
		bodies = append(bodies, sharedRefused)
	} else {
		bodies = append(bodies, sharedBodies()...)
	}
	err := mpgo.Join(func(c *comm.Comm) error {
		for i, body := range bodies {
			if err := body(c); err != nil {
				return fmt.Errorf("rank function %d: %w", i, err)
			}
		}
		fmt.Printf("window job: rank %d of %d: ok\n", c.Rank(), c.Size())
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// jobWindowPath is the path windows take in a process of the job, as its
// environment says: one-sided over the RDMA backend (with the provider's
// atomics, except over net, which has none, and shm, whose are unsound),
// unless MPGO_WINDOW_PATH=am forces the handlers, which every other
// backend uses.
func jobWindowPath() string {
	switch {
	case os.Getenv("MPGO_BACKEND") != "rdma" || os.Getenv(typed.WindowPathEnv) == "am":
		return "am"
	case os.Getenv("FI_PROVIDER") == "net" || os.Getenv("FI_PROVIDER") == "shm":
		return "fabric" // no atomics: none on net, unsound ones on shm (backend/rdma's atomicsSound)
	}
	return "fabric+atomics"
}

// underMPIExec runs this test binary as a job of np processes under
// mpiexec, with env added to the environment, and returns its output and
// how it ended (an *exec.ExitError for a job that failed); t skips where
// there is no mpiexec, or when the test itself runs under a launcher, and
// fails after 2 minutes.
func underMPIExec(t *testing.T, np int, env ...string) ([]byte, error) {
	t.Helper()
	if os.Getenv("PMI_RANK") != "" || os.Getenv("OMPI_COMM_WORLD_RANK") != "" {
		t.Skip("the test itself runs under a launcher")
	}
	mpiexec, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("no mpiexec")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpiexec, "-n", fmt.Sprint(np), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("no end after 2 minutes:\n%s", out)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out, err
}

func TestWindowUnderMPIExec(t *testing.T) {
	type job struct {
		name string
		env  []string
		np   int
	}
	jobs := []job{
		{"shm/4x1", nil, 4}, // processes of one host: the shared-memory device, by default
		{"shm/2x2", []string{"MPGO_RANKS_PER_PROC=2"}, 2},
		{"tcp/4x1", []string{"MPGO_SHM=0"}, 4},
		{"tcp/2x2", []string{"MPGO_SHM=0", "MPGO_RANKS_PER_PROC=2"}, 2},
	}
	if rdmaBuilt {
		for _, p := range []string{"tcp", "shm", "net"} {
			jobs = append(jobs, job{"rdma-" + p + "/4x1", []string{"MPGO_SHM=0", "MPGO_BACKEND=rdma", "FI_PROVIDER=" + p}, 4})
		}
		// The handlers' path over the same backend, for comparison.
		jobs = append(jobs, job{"rdma-tcp-am/4x1", []string{"MPGO_SHM=0", "MPGO_BACKEND=rdma", "FI_PROVIDER=tcp", typed.WindowPathEnv + "=am"}, 4})
	}
	for _, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			out, err := underMPIExec(t, j.np, append([]string{windowJobEnv + "=1"}, j.env...)...)
			if err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			for r := range 4 {
				if want := fmt.Sprintf("window job: rank %d of 4: ok", r); !strings.Contains(string(out), want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
		})
	}
}
