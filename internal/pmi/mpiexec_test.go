package pmi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mpgo/mpgo/internal/pmi"
)

// The helper process: this test binary started by a real mpiexec, which
// runs helperMain instead of the tests.
const helperEnv = "MPGO_PMI_TEST_HELPER"

func helperMain() int {
	job, err := pmi.FromEnv(nil)
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	r := job.Rank()
	if os.Getenv(helperEnv) == "abort" {
		if r == 1 {
			job.Abort(7, "test")
			time.Sleep(10 * time.Second)
			return 0
		}
		time.Sleep(10 * time.Second)
		return 0
	}
	if err := job.Put(fmt.Sprintf("k%d", r), fmt.Sprintf("%x", r*1000)); err != nil {
		fmt.Println("error:", err)
		return 2
	}
	if err := job.Fence(); err != nil {
		fmt.Println("error:", err)
		return 2
	}
	for k := range job.Size() {
		if v, err := job.Get(fmt.Sprintf("k%d", k)); err != nil || v != fmt.Sprintf("%x", k*1000) {
			fmt.Printf("error: get k%d: %q %v\n", k, v, err)
			return 2
		}
	}
	if _, err := job.Get("nokey"); !errors.Is(err, pmi.ErrNotFound) {
		fmt.Println("error: missing key:", err)
		return 2
	}
	fmt.Printf("ok rank %d of %d local %d of %d\n", r, job.Size(), job.LocalRank(), job.LocalSize())
	if err := job.Finalize(); err != nil {
		fmt.Println("error:", err)
		return 2
	}
	return 0
}

func mpiexec(t *testing.T, mode string, n int) (string, error) {
	t.Helper()
	path, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("mpiexec not installed (apt-get install mpich)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-n", fmt.Sprint(n), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("mpiexec hung:\n%s", out)
	}
	return string(out), err
}

// Against the real Hydra: put, barrier, get, missing key, finalize.
func TestMPIExec(t *testing.T) {
	out, err := mpiexec(t, "kv", 4)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for r := range 4 {
		if want := fmt.Sprintf("ok rank %d of 4 local %d of 4", r, r); !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// Abort through Hydra ends the job with the given status.
func TestMPIExecAbort(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	start := time.Now()
	out, err := mpiexec(t, "abort", 2)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("mpiexec: %v, want exit status 7\n%s", err, out)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("abort took %v", d)
	}
}
