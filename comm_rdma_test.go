//go:build rdma

package mpgo_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// buildTCPCheckRDMA builds cmd/mpcheck with the
// RDMA backend (MPGO_BACKEND=rdma selects it at run time).
func buildTCPCheckRDMA(t *testing.T) string {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		gocmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "mpcheck-rdma")
	out, err := exec.Command(gocmd, "build", "-tags", "rdma", "-o", bin, "github.com/mpgo/mpgo/cmd/mpcheck").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// fabricProviders: FI_PROVIDER when set, else tcp and shm.
func fabricProviders() []string {
	if p := os.Getenv("FI_PROVIDER"); p != "" {
		return []string{p}
	}
	return []string{"tcp", "shm"}
}

// The semantics suite across 4 processes started by MPICH's mpiexec,
// over the RDMA backend on each provider; then 2 processes of 2 ranks;
// then a failing rank, which must end the job with an error (ABORT reaches
// the others), never a hang.
func TestFabricUnderMPIExec(t *testing.T) {
	if launched() {
		t.Skip("the test itself runs under a launcher")
	}
	mpiexec, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("no mpiexec")
	}
	bin := buildTCPCheckRDMA(t)
	for _, prov := range fabricProviders() {
		env := []string{"MPGO_BACKEND=rdma", "FI_PROVIDER=" + prov, "MPGO_SHM=0"} // the fabric between processes of this host too
		t.Run(prov+"/semantics", func(t *testing.T) {
			out, code := runProgram(t, 2*time.Minute, env, mpiexec, "-n", "4", bin, "semantics")
			if code != 0 {
				t.Fatalf("exit status %d:\n%s", code, out)
			}
			for r := range 4 {
				if want := fmt.Sprintf("rank %d of 4: ok", r); !strings.Contains(out, want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
		})
		t.Run(prov+"/2x2", func(t *testing.T) {
			out, code := runProgram(t, 2*time.Minute, append(env, "MPGO_RANKS_PER_PROC=2"), mpiexec, "-n", "2", bin, "semantics")
			if code != 0 || strings.Count(out, "of 4: ok") != 4 {
				t.Fatalf("exit status %d:\n%s", code, out)
			}
		})
		t.Run(prov+"/fail", func(t *testing.T) {
			out, code := runProgram(t, time.Minute, env, mpiexec, "-n", "4", bin, "fail")
			if code == 0 || !strings.Contains(out, "rank 2 fails on purpose") {
				t.Fatalf("exit status %d:\n%s", code, out)
			}
			// Each other process learns the failed rank's own error, once
			// (comm.PeerFailure), as over TCP and shared memory.
			if n := strings.Count(out, "rank 2 failed: mpcheck: rank 2 fails on purpose"); n != 3 {
				t.Errorf("%d of the 3 other processes reported rank 2's error:\n%s", n, out)
			}
			if strings.Contains(out, "peer process lost") {
				t.Errorf("a chain of consequences instead of the cause:\n%s", out)
			}
		})
		t.Run(prov+"/exit", func(t *testing.T) { // a process vanishes: the job ends, no hang
			if out, code := runProgram(t, time.Minute, env, mpiexec, "-n", "4", bin, "exit"); code == 0 {
				t.Fatalf("exit status 0:\n%s", out)
			}
		})
	}
}

// A job over shm that fails leaves nothing in /dev/shm, however it
// fails: a rank that returns an error or panics (its process aborts the
// job, and the launcher kills the others with SIGKILL), a process that
// exits in the middle of the job or is killed (the launcher kills the
// others). Each used to leave its region, a 16 MiB file named after the
// process, behind. The job is this test binary under mpiexec (helperMain).
func TestFabricShmFilesAfterFailure(t *testing.T) {
	if launched() {
		t.Skip("the test itself runs under a launcher")
	}
	if !slices.Contains(fabricProviders(), "shm") {
		t.Skip("FI_PROVIDER names another provider")
	}
	mpiexec, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("no mpiexec")
	}
	const procs = 3
	for _, mode := range []string{"fail", "panic", "exit", "kill"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			before := shmFiles(t)
			env := []string{"MPGO_BACKEND=rdma", "FI_PROVIDER=shm", "MPGO_SHM=0", helperEnv + "=" + mode, helperPIDs + "=" + dir}
			out, code := runProgram(t, time.Minute, env, mpiexec, "-n", strconv.Itoa(procs), os.Args[0])
			if code == 0 {
				t.Fatalf("the failing job exited with status 0:\n%s", out)
			}
			after := shmFiles(t)
			t.Logf("/dev/shm: %d entries before the job, %d after", len(before), len(after))
			for r := range procs {
				pid, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(r)))
				if err != nil {
					t.Fatalf("process of rank %d: %v\n%s", r, err, out)
				}
				for _, f := range after {
					if strings.HasPrefix(f, string(pid)+":") {
						t.Errorf("rank %d's process (%s) left /dev/shm/%s", r, pid, f)
					}
				}
			}
		})
	}
}

// shmFiles lists /dev/shm.
func shmFiles(t *testing.T) []string {
	t.Helper()
	es, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name()
	}
	return names
}
