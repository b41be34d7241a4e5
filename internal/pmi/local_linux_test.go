package pmi_test

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mpgo/mpgo/internal/pmi"
)

// ompiEnv is the environment Open MPI's mpirun gives process rank of a job
// of size processes, local of them on this host, in the PMIx namespace ns
// (as mpirun 4.1 sets it, less what mpgo does not read).
func ompiEnv(ns string, rank, size, local int, extra ...string) func(string) string {
	kv := []string{"OMPI_COMM_WORLD_RANK", strconv.Itoa(rank), "OMPI_COMM_WORLD_SIZE", strconv.Itoa(size),
		"OMPI_COMM_WORLD_LOCAL_RANK", strconv.Itoa(rank % local), "OMPI_COMM_WORLD_LOCAL_SIZE", strconv.Itoa(local),
		"PMIX_NAMESPACE", ns, "OMPI_MCA_ess_base_jobid", ns}
	return env(append(kv, extra...)...)
}

// An Open MPI job on one host joins without MPGO_ROOT or MPGO_SECRET: its
// processes meet at process 0's rendezvous on a Unix socket named after
// the job, fence, and see each other's pairs; a second job at the same
// time (another namespace) meets apart.
func TestRootLocalOneHost(t *testing.T) {
	const n = 4
	for _, ns := range []string{"1001", randomHex(8)} {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for rank := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[rank] = func() error {
					j, err := pmi.FromEnv(ompiEnv(ns, rank, n, n))
					if err != nil {
						return err
					}
					if err := j.Put("k"+strconv.Itoa(rank), ns+"/"+strconv.Itoa(rank)); err != nil {
						return err
					}
					if err := j.Fence(); err != nil {
						return err
					}
					for r := range n {
						if v, err := j.Get("k" + strconv.Itoa(r)); err != nil || v != ns+"/"+strconv.Itoa(r) {
							return fmt.Errorf("rank %d's pair: %q, %v", r, v, err)
						}
					}
					return j.Finalize()
				}()
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
	}
}

// A job on several hosts still needs MPGO_ROOT, and says so.
func TestRootLocalSeveralHosts(t *testing.T) {
	_, err := pmi.FromEnv(ompiEnv(randomHex(8), 0, 4, 2))
	if !errors.Is(err, pmi.ErrNoLauncher) || !strings.Contains(err.Error(), "MPGO_ROOT=host:port") {
		t.Fatalf("got %v, want ErrNoLauncher naming MPGO_ROOT", err)
	}
}

// Process 0 cannot serve a rendezvous whose name another process holds,
// and says how to go around it; a process that is not process 0 and
// finds there something that does not speak mpgo's rendezvous fails too.
func TestRootLocalNameTaken(t *testing.T) {
	ns := randomHex(8)
	name, ok := pmi.LocalRendezvous(ompiEnv(ns, 0, 2, 2))
	if !ok || !strings.HasPrefix(name, "@") {
		t.Fatalf("rendezvous %q, %v: want an abstract socket", name, ok)
	}
	ln, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = pmi.FromEnv(ompiEnv(ns, 0, 2, 2))
	if !errors.Is(err, pmi.ErrNoLauncher) || !strings.Contains(err.Error(), "MPGO_ROOT") {
		t.Fatalf("process 0: got %v, want ErrNoLauncher naming MPGO_ROOT", err)
	}
	// Process 1 dials it and finds no mpgo rendezvous there: it fails
	// (at the hello) instead of waiting for process 0 for ever.
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("SSH-2.0-OpenSSH\n"))
			c.Close()
		}
	}()
	_, err = pmi.FromEnv(ompiEnv(ns, 1, 2, 2))
	if err == nil {
		t.Fatal("process 1 joined a rendezvous that is not one")
	}
}
