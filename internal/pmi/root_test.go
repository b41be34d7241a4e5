package pmi_test

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mpgo/mpgo/internal/pmi"
)

// startRoot starts process 0 of a rendezvous on a free loopback port.
func startRoot(t *testing.T, n int, secret string) (*pmi.Root, string) {
	t.Helper()
	j, err := pmi.NewRoot(pmi.RootConfig{Rank: 0, Size: n, Addr: "127.0.0.1:0", Secret: []byte(secret), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return j, j.Addr()
}

func TestRootFences(t *testing.T) {
	const n = 4
	root, addr := startRoot(t, n, "s3cret")
	jobs := []pmi.Job{root}
	for i := 1; i < n; i++ {
		j, err := pmi.NewRoot(pmi.RootConfig{Rank: i, Size: n, Addr: addr, Secret: []byte("s3cret"), Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 2 {
				j.Put(fmt.Sprintf("r%d-k%d", round, i), fmt.Sprintf("v%d", i))
				if err := j.Fence(); err != nil {
					t.Error(err)
					return
				}
				for k := range n {
					if v, err := j.Get(fmt.Sprintf("r%d-k%d", round, k)); err != nil || v != fmt.Sprintf("v%d", k) {
						t.Errorf("process %d round %d: k%d = %q, %v", i, round, k, v, err)
					}
				}
			}
			if _, err := j.Get("nokey"); !errors.Is(err, pmi.ErrNotFound) {
				t.Errorf("missing key: %v", err)
			}
			if err := j.Finalize(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// Without the job's secret a stranger is refused and learns nothing.
func TestRootRefusesStrangers(t *testing.T) {
	root, addr := startRoot(t, 2, "s3cret")
	_, err := pmi.NewRoot(pmi.RootConfig{Rank: 1, Size: 2, Addr: addr, Secret: []byte("guess"), Timeout: 2 * time.Second})
	if !errors.Is(err, pmi.ErrProtocol) {
		t.Errorf("wrong secret: %v, want ErrProtocol", err)
	}
	// A raw connection that says nothing useful.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("hello rank=1 size=2 mac=00\n"))
	buf := make([]byte, 200)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, _ := c.Read(buf) // the nonce line
	if m, _ := c.Read(buf[n:]); m > 0 && string(buf[n:n+m]) != "refused\n" {
		t.Errorf("stranger got %q", buf[n:n+m])
	}
	c.Close()
	root.Abort(1, "test over")
}

// A process that leaves without finalizing fails the others' fence: an
// error, not a hang.
func TestRootProcessLost(t *testing.T) {
	root, addr := startRoot(t, 3, "")
	j1, err := pmi.NewRoot(pmi.RootConfig{Rank: 1, Size: 3, Addr: addr, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	j2, err := pmi.NewRoot(pmi.RootConfig{Rank: 2, Size: 3, Addr: addr, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- j1.Fence() }()
	j2.Abort(1, "gone")
	select {
	case err := <-done:
		if !errors.Is(err, pmi.ErrProtocol) {
			t.Errorf("fence after a process left: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("fence hangs after a process left")
	}
	j1.Finalize()
	root.Finalize()
}

func TestRootFromEnv(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	job, err := pmi.FromEnv(env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1",
		"OMPI_COMM_WORLD_LOCAL_RANK", "0", "OMPI_COMM_WORLD_LOCAL_SIZE", "1", "MPGO_ROOT", addr))
	if err != nil {
		t.Fatal(err)
	}
	job.Put("a", "b")
	if err := job.Fence(); err != nil {
		t.Fatal(err)
	}
	if v, err := job.Get("a"); v != "b" || err != nil {
		t.Errorf("get: %q %v", v, err)
	}
	if err := job.Finalize(); err != nil {
		t.Fatal(err)
	}
}
