package mpgo_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/pmi"
)

// buildTCPCheck builds the test program cmd/mpcheck
// into a temporary directory.
func buildTCPCheck(t *testing.T) string {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		gocmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "mpcheck")
	out, err := exec.Command(gocmd, "build", "-o", bin, "github.com/mpgo/mpgo/cmd/mpcheck").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runProgram runs argv with extra environment, failing the test if it
// does not end within limit. It returns the combined output and the exit
// status.
func runProgram(t *testing.T, limit time.Duration, env []string, argv ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s hung (killed after %v):\n%s", strings.Join(argv, " "), time.Since(start), out)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	return "", 0
}

// The same program, started plainly: Main runs WithRanks goroutine ranks.
func TestMainWithoutLauncher(t *testing.T) {
	if launched() {
		t.Skip("the test itself runs under a launcher")
	}
	bin := buildTCPCheck(t)
	out, code := runProgram(t, time.Minute, nil, bin, "-np", "3", "semantics")
	if code != 0 {
		t.Fatalf("exit status %d:\n%s", code, out)
	}
	for r := range 3 {
		if want := fmt.Sprintf("rank %d of 3: ok", r); !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	// Join without a launcher says so.
	if err := mpgo.Join(func(*comm.Comm) error { return nil }); !errors.Is(err, mpgo.ErrBootstrap) {
		t.Errorf("Join without a launcher: %v, want ErrBootstrap", err)
	}
}

func TestWithRanks(t *testing.T) {
	if err := mpgo.Run(2, func(*comm.Comm) error { return nil }, mpgo.WithRanks(0)); !errors.Is(err, comm.ErrArg) {
		t.Errorf("WithRanks(0): %v", err)
	}
}

// Started plainly, Main's ranks: MPGO_NP beats WithRanks (the program's
// default, as a flag's default value is), which beats one per CPU.
func TestMainRanksPrecedence(t *testing.T) {
	env := func(np string) func(string) string {
		return func(k string) string {
			if k == "MPGO_NP" {
				return np
			}
			return ""
		}
	}
	tests := []struct {
		name string
		np   string
		opts []mpgo.Option
		want int
	}{
		{"neither", "", nil, runtime.NumCPU()},
		{"WithRanks", "", []mpgo.Option{mpgo.WithRanks(3)}, 3},
		{"MPGO_NP", "5", nil, 5},
		{"MPGO_NP beats WithRanks", "5", []mpgo.Option{mpgo.WithRanks(3)}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := mpgo.MainRanks(env(tt.np), tt.opts...)
			if err != nil || n != tt.want {
				t.Errorf("MainRanks: %d, %v; want %d", n, err, tt.want)
			}
		})
	}
	for _, bad := range []string{"0", "-2", "four", "4x"} {
		if n, err := mpgo.MainRanks(env(bad), mpgo.WithRanks(3)); !errors.Is(err, comm.ErrArg) || !strings.Contains(fmt.Sprint(err), "MPGO_NP") {
			t.Errorf("MPGO_NP=%q: %d, %v; want an error naming MPGO_NP wrapping ErrArg", bad, n, err)
		}
	}
}

// The documented pattern, mpgo.Main(fn, mpgo.WithRanks(*np)), run as a
// program with MPGO_NP set: the environment's number of ranks run.
func TestMainMPGONPOverridesFlag(t *testing.T) {
	if launched() {
		t.Skip("the test itself runs under a launcher")
	}
	bin := buildTCPCheck(t)
	out, code := runProgram(t, time.Minute, []string{"MPGO_NP=2"}, bin, "-np", "3", "semantics")
	if code != 0 || !strings.Contains(out, "rank 1 of 2: ok") || strings.Contains(out, "of 3") {
		t.Errorf("MPGO_NP=2 mpcheck -np 3: exit status %d, want ranks of 2:\n%s", code, out)
	}
}

func TestRanksIgnored(t *testing.T) {
	for _, tt := range []struct{ ranks, size int }{{0, 4}, {4, 4}, {1, 1}} {
		if w := mpgo.RanksIgnored(tt.ranks, tt.size); w != "" {
			t.Errorf("WithRanks(%d) of %d ranks: warned %q", tt.ranks, tt.size, w)
		}
	}
	w := mpgo.RanksIgnored(3, 2)
	if !strings.Contains(w, "WithRanks(3) ignored") || !strings.Contains(w, "started 2 ranks") || strings.Contains(w, "\n") {
		t.Errorf("WithRanks(3) of 2 ranks: %q, want one line naming both", w)
	}
}

// Under mpiexec a -np flag (WithRanks) that disagrees with the launcher's
// -n is ignored with one warning for the job, not silently.
func TestUnderMPIExecWarnsRanks(t *testing.T) {
	mpiexec, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("mpiexec not installed (apt-get install mpich)")
	}
	bin := buildTCPCheck(t)
	out, code := runProgram(t, time.Minute, nil, mpiexec, "-n", "2", bin, "-np", "3", "semantics")
	if code != 0 || !strings.Contains(out, "rank 1 of 2: ok") {
		t.Fatalf("mpiexec -n 2 mpcheck -np 3: exit status %d:\n%s", code, out)
	}
	if n := strings.Count(out, "WithRanks(3) ignored: the launcher started 2 ranks"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, out)
	}
	out, code = runProgram(t, time.Minute, nil, mpiexec, "-n", "2", bin, "-np", "2", "semantics")
	if code != 0 || strings.Contains(out, "ignored") {
		t.Errorf("mpiexec -n 2 mpcheck -np 2: exit status %d, want no warning:\n%s", code, out)
	}
}

// Under MPICH's mpiexec: the semantics suite across 4 processes, 2
// processes of 2 ranks (through shared memory, the processes sharing this
// host, and over TCP with MPGO_SHM=0), through Join; a failing rank, a process that
// exits abruptly and one that is killed: the job ends with an error, the
// survivors report the lost peer, never a hang.
func TestUnderMPIExec(t *testing.T) {
	mpiexec, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("mpiexec not installed (apt-get install mpich)")
	}
	bin := buildTCPCheck(t)
	tests := []struct {
		name    string
		n       int
		env     []string
		mode    string
		ok      bool
		want    []string
		inShort bool
	}{
		{"semantics", 4, nil, "semantics", true, []string{"rank 0 of 4: ok", "rank 1 of 4: ok", "rank 2 of 4: ok", "rank 3 of 4: ok"}, true},
		{"semantics over TCP", 4, []string{"MPGO_SHM=0"}, "semantics", true, []string{"rank 0 of 4: ok", "rank 3 of 4: ok"}, true},
		{"semantics without CMA", 4, []string{"MPGO_SHM_CMA=0"}, "semantics", true, []string{"rank 0 of 4: ok", "rank 3 of 4: ok"}, false},
		{"hybrid over TCP", 2, []string{"MPGO_RANKS_PER_PROC=2", "MPGO_SHM=0"}, "semantics", true, []string{"rank 0 of 4: ok", "rank 3 of 4: ok"}, false},
		{"hybrid", 2, []string{"MPGO_RANKS_PER_PROC=2"}, "semantics", true, []string{"rank 0 of 4: ok", "rank 3 of 4: ok"}, false},
		{"join", 3, nil, "join", true, []string{"join: ok"}, false},
		{"persistent collectives allocate nothing", 4, nil, "allocs", true, []string{"rank 0: allocs: ok", "rank 3: allocs: ok"}, false},
		{"persistent collectives allocate nothing over TCP", 2, []string{"MPGO_SHM=0"}, "allocs", true, []string{"rank 0: allocs: ok", "rank 1: allocs: ok"}, false},
		{"failing rank", 4, nil, "fail", false, []string{"rank 2 fails on purpose"}, true},
		{"failing rank in a persistent collective", 4, nil, "failpersistent", false, []string{"rank 2 fails on purpose"}, false},
		{"panicking rank", 4, nil, "panic", false, []string{"rank 2 failed: panicked: mpcheck: rank 2 panics on purpose in main.main"}, true},
		// Hydra ends the job itself when a process dies before finalizing:
		// the survivors report the lost peer unless it is faster.
		{"process exits", 4, nil, "exit", false, nil, true},
		{"process killed", 4, nil, "kill", false, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if testing.Short() && !tt.inShort {
				t.Skip("short")
			}
			start := time.Now()
			out, code := runProgram(t, time.Minute, tt.env, mpiexec, "-n", fmt.Sprint(tt.n), bin, tt.mode)
			if (code == 0) != tt.ok {
				t.Errorf("exit status %d:\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
			if strings.Contains(out, "peer process lost") && (tt.mode == "fail" || tt.mode == "failpersistent" || tt.mode == "panic") {
				t.Errorf("a rank's failure reached the others as a lost process:\n%s", out)
			}
			if d := time.Since(start); !tt.ok && d > 20*time.Second {
				t.Errorf("the failed job took %v to end", d)
			}
		})
	}
}

// procResult is how a process that a test started ended.
type procResult struct {
	out  string
	code int           // exit status; -1 when killed
	took time.Duration // from the start of the job
}

// runJobProcesses runs n processes of argv joined through the MPGO_ROOT
// rendezvous, as under Open MPI's mpirun (which does not end the job when
// a process dies), each with the extra environment env. Process leftover
// (-1: none) is not expected to end by itself: it is killed once the
// others ended. The test fails when they run longer than limit.
func runJobProcesses(t *testing.T, n, leftover int, limit time.Duration, env []string, argv ...string) []procResult {
	t.Helper()
	return runJobProcessesDuring(t, n, leftover, limit, env, nil, argv...)
}

// lockedBuffer is a process's output, read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// runJobProcessesDuring is runJobProcesses, calling during (when not nil)
// once the processes started, with them and a function that returns what
// process r printed so far.
func runJobProcessesDuring(t *testing.T, n, leftover int, limit time.Duration, env []string,
	during func(procs []*os.Process, out func(r int) string), argv ...string) []procResult {
	t.Helper()
	procs := make([]*os.Process, n)
	outs := make([]*lockedBuffer, n)
	root := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	leftCtx, killLeftover := context.WithCancel(ctx)
	defer killLeftover()
	results := make([]procResult, n)
	var all, others sync.WaitGroup
	start := time.Now()
	for r := range n {
		cctx := ctx
		if r == leftover {
			cctx = leftCtx
		} else {
			others.Add(1)
		}
		cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "OMPI_COMM_WORLD_RANK="+fmt.Sprint(r), "OMPI_COMM_WORLD_SIZE="+fmt.Sprint(n),
			"OMPI_COMM_WORLD_LOCAL_RANK="+fmt.Sprint(r), "OMPI_COMM_WORLD_LOCAL_SIZE="+fmt.Sprint(n),
			"MPGO_ROOT="+root, "MPGO_SECRET="+testSecret)
		cmd.Env = append(cmd.Env, env...)
		out := new(lockedBuffer)
		cmd.Stdout, cmd.Stderr = out, out
		ownProcessGroup(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[r], outs[r] = cmd.Process, out
		all.Add(1)
		go func() {
			defer all.Done()
			cmd.Wait()
			results[r] = procResult{out.String(), cmd.ProcessState.ExitCode(), time.Since(start)}
			if r != leftover {
				others.Done()
			}
		}()
	}
	if during != nil {
		during(procs, func(r int) string { return outs[r].String() })
	}
	others.Wait()
	killLeftover()
	all.Wait()
	if ctx.Err() != nil {
		for r, res := range results {
			t.Logf("process %d (exit status %d):\n%s", r, res.code, res.out)
		}
		t.Fatalf("%s hung (killed after %v)", strings.Join(argv, " "), limit)
	}
	return results
}

// Four processes started by the test itself, joined through the MPGO_ROOT
// rendezvous: one kills itself mid-run, and each survivor must notice
// within a bounded time, report the lost peer and exit non-zero; through
// shared memory (the processes share this host: the end of the killed
// process's Unix socket tells) and over TCP.
func TestKilledProcessWithoutLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	bin := buildTCPCheck(t)
	for _, tt := range []struct {
		name string
		env  []string
	}{{"shm", nil}, {"tcp", []string{"MPGO_SHM=0"}}} {
		t.Run(tt.name, func(t *testing.T) {
			for r, res := range runJobProcesses(t, 4, -1, time.Minute, tt.env, bin, "kill") {
				if res.code == 0 {
					t.Errorf("process %d exited 0:\n%s", r, res.out)
				}
				if r == 1 {
					continue // the victim
				}
				if !strings.Contains(res.out, "peer lost: true") || !strings.Contains(res.out, "peer process lost") {
					t.Errorf("process %d did not report the lost peer:\n%s", r, res.out)
				}
				if byShm := strings.Contains(res.out, "shm: "); byShm != (tt.env == nil) {
					t.Errorf("process %d: the loss told by the shared-memory backend: %v, want %v:\n%s", r, byShm, tt.env == nil, res.out)
				}
				if res.took > 20*time.Second {
					t.Errorf("process %d took %v to end", r, res.took)
				}
			}
		})
	}
}

// A rank that panics, or returns an error, in one process of four: its
// process tells the others the rank's original error before it breaks
// off, and each of them reports that error once ("rank 2 failed: …"),
// with nothing of the lost connection it then sees.
func TestPeerFailureReportedOnce(t *testing.T) {
	bin := buildTCPCheck(t)
	for _, tt := range []struct{ mode, want string }{
		{"panic", "rank 2 failed: panicked: mpcheck: rank 2 panics on purpose in main.main.func"},
		{"fail", "rank 2 failed: mpcheck: rank 2 fails on purpose"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			for r, res := range runJobProcesses(t, 4, -1, time.Minute, nil, bin, tt.mode) {
				if res.code == 0 {
					t.Errorf("process %d exited 0:\n%s", r, res.out)
				}
				if r == 2 {
					continue // the failing rank's own process prints its error in full
				}
				if n := strings.Count(res.out, tt.want); n != 1 || strings.Contains(res.out, "peer process lost") ||
					strings.Count(res.out, "\n") != 1 {
					t.Errorf("process %d: want %q once, on one line, got:\n%s", r, tt.want, res.out)
				}
			}
		})
	}
}

// A job that hangs, ended with SIGINT or SIGQUIT: each process prints its
// ranks' pending operations, as a deadlock report names them, and then
// ends as the signal ends a process. Rank 1 computes (sleeps in its own
// code, which no detector takes for blocked) while ranks 0 and 2 wait
// for it.
func TestSignalReport(t *testing.T) {
	bin := buildTCPCheck(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			signalled := func(procs []*os.Process, out func(int) string) {
				deadline := time.Now().Add(30 * time.Second)
				for r := range procs { // every rank is where it hangs
					for !strings.Contains(out(r), "hangs") && time.Now().Before(deadline) {
						time.Sleep(10 * time.Millisecond)
					}
				}
				// From the print to the park: the receive drives the
				// device's progress for a while first, and under the load of
				// a whole -race run 100 ms was once too short (a rank still
				// "running" when the signal came).
				time.Sleep(500 * time.Millisecond)
				for _, p := range procs {
					p.Signal(sig)
				}
			}
			results := runJobProcessesDuring(t, 3, -1, time.Minute, nil, signalled, bin, "hang", "-busy", "1m")
			for r, res := range results {
				if res.code == 0 {
					t.Errorf("process %d exited 0:\n%s", r, res.out)
				}
				want := fmt.Sprintf("rank %d: Recv(src=1, tag=0) on world at main.go:", r)
				if r == 1 {
					want = "rank 1: running"
				}
				if !strings.Contains(res.out, fmt.Sprintf("mpgo: process %d of 3: %v: pending operations:\n  %s", r, sig, want)) {
					t.Errorf("process %d: no report with %q:\n%s", r, want, res.out)
				}
			}
		})
	}
}

// Main's goroutine ranks report on SIGINT too, every rank in one process.
func TestSignalReportGoroutineRanks(t *testing.T) {
	if launched() {
		t.Skip("the test itself runs under a launcher")
	}
	bin := buildTCPCheck(t)
	cmd := exec.Command(bin, "-np", "3", "-busy", "1m", "hang")
	out := new(lockedBuffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(out.String(), "hangs") < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	timer := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	if err := cmd.Wait(); err == nil {
		t.Errorf("exited 0 after SIGINT:\n%s", out)
	}
	want := "mpgo: interrupt: pending operations:\n" +
		"  rank 0: Recv(src=1, tag=0) on world at main.go:"
	if s := out.String(); !strings.Contains(s, want) || !strings.Contains(s, "\n  rank 1: running\n  rank 2: Recv(src=1, tag=0) on world at main.go:") {
		t.Errorf("no report of every rank:\n%s", s)
	}
}

// A process stopped with SIGSTOP (or wedged outside mpgo) keeps its
// connections open: only the heartbeat tells. With MPGO_HEARTBEAT=500ms
// the others, waiting on a receive from it, fail with ErrPeerLost naming
// it within about that time: process 0 dialed it, process 2 was dialed
// by it (both ends of a connection watch).
func TestStoppedProcessHeartbeat(t *testing.T) {
	bin := buildTCPCheck(t)
	const heartbeat = 500 * time.Millisecond
	results := runJobProcesses(t, 3, 1, 30*time.Second, []string{"MPGO_HEARTBEAT=" + heartbeat.String()}, bin, "stop")
	for r, res := range results {
		if r == 1 {
			if res.code != -1 {
				t.Errorf("the stopped process ran on: exit status %d:\n%s", res.code, res.out)
			}
			continue // stopped until killed
		}
		if res.code == 0 || !strings.Contains(res.out, "peer lost: true") || !strings.Contains(res.out, "process 1 on host") ||
			!strings.Contains(res.out, "sent nothing") {
			t.Errorf("process %d did not report process 1 lost for its silence (exit status %d):\n%s", r, res.code, res.out)
		}
		if res.took > 10*time.Second {
			t.Errorf("process %d took %v to end", r, res.took)
		}
	}
}

// A rank that computes for a long time without calling mpgo is not lost:
// its process's reader and heartbeat run on (one P, so only preemption
// lets them), and its peer's heartbeat frames are read all along. Rank 1
// computes for 6 heartbeats of 500 ms while rank 0 waits.
func TestComputeWithHeartbeat(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	bin := buildTCPCheck(t)
	env := []string{"MPGO_HEARTBEAT=500ms", "GOMAXPROCS=1"}
	for r, res := range runJobProcesses(t, 2, -1, time.Minute, env, bin, "compute", "-busy", "3s") {
		if res.code != 0 {
			t.Errorf("process %d: exit status %d:\n%s", r, res.code, res.out)
		}
		if r == 0 && !strings.Contains(res.out, "result after") {
			t.Errorf("process 0 did not get the result:\n%s", res.out)
		}
	}
}

// Under Open MPI's mpirun (Debian's openmpi-bin installs it as
// mpiexec.openmpi beside MPICH's mpiexec): with MPGO_ROOT and MPGO_SECRET
// passed with -x the semantics suite passes; without the secret every
// process refuses to start, saying how to give one; without either, on
// one host, the processes meet at their local rendezvous and the suite
// passes, with mpirun's default binding (a core each) and without.
func TestUnderOpenMPI(t *testing.T) {
	mpirun, err := exec.LookPath("mpiexec.openmpi")
	if err != nil {
		t.Skip("Open MPI not installed (apt-get install openmpi-bin)")
	}
	if launched() {
		t.Skip("the test itself runs under a launcher")
	}
	bin := buildTCPCheck(t)
	env := []string{"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "MPGO_SECRET="}
	argv := []string{mpirun, "--oversubscribe", "-n", "2", "-x", "MPGO_ROOT=" + freeAddr(t)}
	out, code := runProgram(t, time.Minute, append(env, "MPGO_SECRET="+testSecret), append(argv, "-x", "MPGO_SECRET", bin, "semantics")...)
	if code != 0 || !strings.Contains(out, "rank 0 of 2: ok") || !strings.Contains(out, "rank 1 of 2: ok") {
		t.Errorf("with MPGO_SECRET: exit status %d:\n%s", code, out)
	}
	out, code = runProgram(t, time.Minute, env, append(argv, bin, "semantics")...)
	if code == 0 || !strings.Contains(out, "export MPGO_SECRET=") {
		t.Errorf("without MPGO_SECRET: exit status %d:\n%s", code, out)
	}
	for _, opts := range [][]string{{"-n", "2"}, {"--oversubscribe", "-n", "4"}} {
		args := append(append([]string{mpirun}, opts...), bin, "semantics")
		out, code = runProgram(t, time.Minute, env, args...)
		if code != 0 || !strings.Contains(out, "rank 0 of") || strings.Contains(out, "MPGO_ROOT") {
			t.Errorf("%v, one host, no MPGO_ROOT: exit status %d:\n%s", args, code, out)
		}
	}
}

// A program that runs the same way started plainly (four goroutine ranks)
// or by a launcher (mpiexec -n 4 ./prog: four processes of one rank).
func ExampleMain_underALauncher() {
	np := 4 // a -np flag, say
	mpgo.Main(func(w *comm.Comm) error {
		x := []byte{byte(w.Rank())}
		sum := make([]byte, 1)
		return w.Allreduce(x, sum, comm.Byte, func(inout, in []byte) { inout[0] += in[0] })
	}, mpgo.WithRanks(np))
}

// Join returns instead of exiting: the caller decides what a failure
// means. Under mpiexec -n 3 every process prints "joined: <nil>".
func ExampleJoin() {
	err := mpgo.Join(func(w *comm.Comm) error {
		return w.Barrier()
	})
	fmt.Println("joined:", err)
}

// launched reports whether a launcher started the test itself.
func launched() bool { return pmi.Detect(os.Getenv) != pmi.None }

// Open MPI's mpirun sets OMPI_COMM_WORLD_*; the addresses travel through
// the rendezvous at MPGO_ROOT. Two processes played by goroutines.
func TestTCPJoinOpenMPIEnv(t *testing.T) {
	root := freeAddr(t)
	jobs, errs := joinAll(2, func(p int) func(string) string {
		return openMPIEnv(p, 2, root, "MPGO_SECRET", testSecret)
	})
	checkRing(t, jobs, errs)
}

// testSecret is the MPGO_SECRET of the tests' rendezvous (16 bytes at
// least, as Join requires).
const testSecret = "shared by mpirun -x MPGO_SECRET"

// freeAddr returns a loopback address nobody listens on (for MPGO_ROOT).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// openMPIEnv is the environment Open MPI's mpirun gives process p of n,
// with MPGO_ROOT=root and the extra variables kv (name, value, …).
func openMPIEnv(p, n int, root string, kv ...string) func(string) string {
	env := map[string]string{
		"OMPI_COMM_WORLD_RANK": fmt.Sprint(p), "OMPI_COMM_WORLD_SIZE": fmt.Sprint(n),
		"OMPI_COMM_WORLD_LOCAL_RANK": fmt.Sprint(p), "OMPI_COMM_WORLD_LOCAL_SIZE": fmt.Sprint(n),
		"MPGO_ROOT": root,
	}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return func(k string) string { return env[k] }
}

// The attack: processes started with MPGO_ROOT and no
// MPGO_SECRET, and a stranger that reaches the rendezvous before the real
// process 1 and joins as rank 1. The processes must refuse to start
// without a secret (so the stranger finds nobody to join), saying how to
// give one; MPGO_INSECURE=1 lets them start anyway.
func TestJoinOpenMPIWithoutSecret(t *testing.T) {
	root := freeAddr(t)
	stranger := make(chan error, 1)
	go func() {
		// It speaks the protocol with an empty secret, as anyone could.
		j, err := pmi.NewRoot(pmi.RootConfig{Rank: 1, Size: 2, Addr: root, Insecure: true, Timeout: time.Second})
		if err == nil {
			j.Put("stranger", "here")
			err = j.Fence()
			j.Finalize()
		}
		stranger <- err
	}()
	j, err := mpgo.JoinEnv(openMPIEnv(0, 2, root))
	if err == nil {
		j.Close()
		t.Error("process 0 started without MPGO_SECRET")
	} else if !errors.Is(err, mpgo.ErrBootstrap) || !strings.Contains(err.Error(), "MPGO_SECRET") {
		t.Errorf("without MPGO_SECRET: %v, want ErrBootstrap telling to set MPGO_SECRET", err)
	}
	if err := <-stranger; err == nil {
		t.Error("a stranger joined the job as rank 1")
	}
	// A short secret is refused too: it would be guessed.
	if j, err := mpgo.JoinEnv(openMPIEnv(0, 1, freeAddr(t), "MPGO_SECRET", "test")); err == nil {
		j.Close()
		t.Error("process 0 started with a 4-byte secret")
	} else if !errors.Is(err, mpgo.ErrBootstrap) || !strings.Contains(err.Error(), "MPGO_SECRET") {
		t.Errorf("a short MPGO_SECRET: %v, want ErrBootstrap naming MPGO_SECRET", err)
	}
	// Allowed explicitly, it starts.
	insecure := freeAddr(t)
	jobs, errs := joinAll(2, func(p int) func(string) string {
		return openMPIEnv(p, 2, insecure, "MPGO_INSECURE", "1")
	})
	checkRing(t, jobs, errs)
}

// joinAll joins n processes played by goroutines, process p with the
// environment env(p), process 0 first.
func joinAll(n int, env func(p int) func(string) string) ([]*job.Job, []error) {
	jobs := make([]*job.Job, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for p := range n {
		getenv := env(p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p > 0 {
				time.Sleep(20 * time.Millisecond) // process 0 serves the rendezvous
			}
			jobs[p], errs[p] = mpgo.JoinEnv(getenv)
		}()
	}
	wg.Wait()
	return jobs, errs
}

// checkRing fails the test unless every process joined, then passes a
// token around the ring of their ranks and closes the jobs.
func checkRing(t *testing.T, jobs []*job.Job, errs []error) {
	t.Helper()
	failed := false
	for p, err := range errs {
		if err != nil {
			t.Errorf("process %d: %v", p, err)
			failed = true
		}
	}
	var wg sync.WaitGroup
	for p, j := range jobs {
		if j == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer j.Close()
			if failed {
				j.Abort(1, "test failed")
				return
			}
			if err := devicetest.Ring(j.World().Comm(j.Ranks()[0])); err != nil {
				t.Errorf("process %d: %v", p, err)
			}
		}()
	}
	wg.Wait()
}

// With MPGO_SECRET, a stranger that connects to the rendezvous first and
// claims rank 1 is refused: the real processes form the job.
func TestJoinOpenMPIStrangerFirst(t *testing.T) {
	root := freeAddr(t)
	refused := make(chan string, 1)
	go func() {
		var c net.Conn
		var err error
		for range 100 { // until process 0 listens
			if c, err = net.Dial("tcp", root); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err != nil {
			refused <- err.Error()
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		r := bufio.NewReader(c)
		r.ReadString('\n') // the challenge
		// A hello well formed but proving nothing.
		fmt.Fprintf(c, "hello rank=1 size=2 nonce=%064x mac=%064x\n", 1, 2)
		line, _ := r.ReadString('\n')
		refused <- line
		r.ReadString('\n') // hold the connection until the job formed
	}()
	jobs, errs := joinAll(2, func(p int) func(string) string {
		if p == 1 {
			time.Sleep(50 * time.Millisecond) // after the stranger
		}
		return openMPIEnv(p, 2, root, "MPGO_SECRET", testSecret)
	})
	if line := <-refused; !strings.HasPrefix(line, "refused") {
		t.Errorf("the stranger's hello got %q, want refused", line)
	}
	checkRing(t, jobs, errs)
}

// A rank claimed by a process that holds the secret (a second job started
// with the same MPGO_ROOT and MPGO_SECRET): the real process of that rank
// fails at once with ErrBootstrap naming its rank, and process 0 fails as
// well instead of running with a process it cannot tell from the real one.
func TestJoinOpenMPIRankTaken(t *testing.T) {
	root := freeAddr(t)
	errs := make([]error, 2)
	took := make([]time.Duration, 2)
	var wg sync.WaitGroup
	join := func(p int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			var j *job.Job
			j, errs[p] = mpgo.JoinEnv(openMPIEnv(p, 2, root, "MPGO_SECRET", testSecret))
			took[p] = time.Since(start)
			if j != nil {
				j.Close()
			}
		}()
	}
	join(0)
	// The other rank 1 joins first (NewRoot dials until process 0
	// listens), then the real one.
	other, err := pmi.NewRoot(pmi.RootConfig{Rank: 1, Size: 2, Addr: root, Secret: []byte(testSecret), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("the other rank 1: %v", err)
	}
	join(1)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the job hangs with rank 1 claimed twice")
	}
	other.Abort(1, "test over")
	if !errors.Is(errs[1], mpgo.ErrBootstrap) || !strings.Contains(fmt.Sprint(errs[1]), "rank 1 is taken") {
		t.Errorf("the real rank 1: %v, want ErrBootstrap saying rank 1 is taken", errs[1])
	}
	if !errors.Is(errs[0], mpgo.ErrBootstrap) {
		t.Errorf("process 0 of a job whose rank 1 was claimed twice: %v, want ErrBootstrap", errs[0])
	}
	for p, d := range took {
		if d > 4*time.Second { // at once, not by a timeout (slack for a starved machine)
			t.Errorf("process %d took %v to fail", p, d)
		}
	}
}
