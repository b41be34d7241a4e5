package pmi_test

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpgo/mpgo/internal/pmi"
)

// secret is the job secret of these tests' rendezvous.
const secret = "sixteen bytes or more"

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
	root, addr := startRoot(t, n, secret)
	jobs := []pmi.Job{root}
	for i := 1; i < n; i++ {
		j, err := pmi.NewRoot(pmi.RootConfig{Rank: i, Size: n, Addr: addr, Secret: []byte(secret), Timeout: 5 * time.Second})
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
	root, addr := startRoot(t, 2, secret)
	_, err := pmi.NewRoot(pmi.RootConfig{Rank: 1, Size: 2, Addr: addr, Secret: []byte("a guess of 16 bytes"), Timeout: 2 * time.Second})
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
	root, addr := startRoot(t, 3, secret)
	j1, err := pmi.NewRoot(pmi.RootConfig{Rank: 1, Size: 3, Addr: addr, Secret: []byte(secret), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	j2, err := pmi.NewRoot(pmi.RootConfig{Rank: 2, Size: 3, Addr: addr, Secret: []byte(secret), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	j2.Abort(1, "gone")
	fencesFail(t, "after a process left", j1)
	j1.Finalize()
	root.Finalize()
}

// fencesFail checks that a fence of each job fails with ErrProtocol, and
// does not hang.
func fencesFail(t *testing.T, what string, jobs ...pmi.Job) {
	t.Helper()
	errs := make(chan error, len(jobs))
	for _, j := range jobs {
		go func() { errs <- j.Fence() }()
	}
	for range jobs {
		select {
		case err := <-errs:
			if !errors.Is(err, pmi.ErrProtocol) {
				t.Errorf("fence %s: %v, want ErrProtocol", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("fence %s hangs", what)
		}
	}
}

func TestRootFromEnv(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	job, err := pmi.FromEnv(env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1",
		"OMPI_COMM_WORLD_LOCAL_RANK", "0", "OMPI_COMM_WORLD_LOCAL_SIZE", "1", "MPGO_ROOT", addr, "MPGO_SECRET", secret))
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

// greeting returns the first line a rendezvous sends, read from one that
// process 0 serves with another secret: what a stranger who connects sees.
func greeting(t *testing.T) string {
	t.Helper()
	root, addr := startRoot(t, 2, "another secret of the same length")
	defer root.Abort(1, "test over")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// A stranger that listens at MPGO_ROOT before process 0 does (another
// account on process 0's host, say) and welcomes whoever says hello must
// not become the job's rendezvous: it cannot prove it holds the secret, so
// a process that connects to it fails at once instead of sending it its
// address and taking the job secret from it.
func TestRootRefusesAFakeRendezvous(t *testing.T) {
	magic, _, _ := strings.Cut(strings.TrimSpace(greeting(t)), " ")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	// The welcome it can say: the bare word, or one with a made-up MAC.
	for _, welcome := range []string{"welcome", "welcome mac=" + randomHex(32)} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "%s nonce=%s\n", magic, randomHex(32))
			r := bufio.NewReader(c)
			if _, err := r.ReadString('\n'); err != nil { // the hello
				return
			}
			fmt.Fprintf(c, "%s\n", welcome)
			r.ReadString('\n') // whatever comes next, until the process hangs up
		}()
		j, err := pmi.NewRoot(pmi.RootConfig{Rank: 1, Size: 2, Addr: ln.Addr().String(), Secret: []byte(secret), Timeout: 5 * time.Second})
		if err == nil {
			j.Abort(1, "test over")
			t.Fatalf("a process joined a rendezvous that does not hold the secret (it said %q)", welcome)
		}
		if !errors.Is(err, pmi.ErrProtocol) || !strings.Contains(err.Error(), "secret") {
			t.Errorf("joining a fake rendezvous that said %q: %v, want ErrProtocol naming the secret", welcome, err)
		}
	}
}

// A stranger that connects first and claims rank 1 without the secret
// (as with no MPGO_SECRET anyone could) is refused and claims nothing: the
// real rank 1 joins after it, and the job forms.
func TestRootStrangerFirst(t *testing.T) {
	root, addr := startRoot(t, 2, secret)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // held open while the real processes join
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "hello rank=1 size=2 nonce=%s mac=%s\n", randomHex(32), randomHex(32))
	if line, _ := r.ReadString('\n'); !strings.HasPrefix(line, "refused") {
		t.Errorf("the stranger's hello got %q, want refused", line)
	}
	// The same with the client code and a wrong secret.
	if j, err := pmi.NewRoot(pmi.RootConfig{Rank: 1, Size: 2, Addr: addr, Secret: []byte("a guess of 16 bytes"), Timeout: 2 * time.Second}); err == nil {
		j.Abort(1, "test over")
		t.Error("a stranger with a wrong secret joined")
	}
	j1, err := pmi.NewRoot(pmi.RootConfig{Rank: 1, Size: 2, Addr: addr, Secret: []byte(secret), Timeout: 5 * time.Second})
	if err != nil {
		root.Abort(1, "test over")
		t.Fatalf("the real rank 1 after a stranger: %v", err)
	}
	var wg sync.WaitGroup
	for _, j := range []pmi.Job{root, j1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.Put(fmt.Sprintf("k%d", j.Rank()), "v")
			if err := j.Fence(); err != nil {
				t.Errorf("process %d: %v", j.Rank(), err)
			}
			if _, err := j.Get(fmt.Sprintf("k%d", 1-j.Rank())); err != nil {
				t.Errorf("process %d: %v", j.Rank(), err)
			}
			j.Finalize()
		}()
	}
	wg.Wait()
}

// A rank claimed twice by processes that both hold the secret (two jobs
// started with the same MPGO_ROOT and MPGO_SECRET): the second fails at
// once with an error that names its rank, and the rendezvous fails for
// everyone rather than forming a job with a process nobody can tell from
// the real one.
func TestRootRankTaken(t *testing.T) {
	root, addr := startRoot(t, 2, secret)
	first, err := pmi.NewRoot(pmi.RootConfig{Rank: 1, Size: 2, Addr: addr, Secret: []byte(secret), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	second, err := pmi.NewRoot(pmi.RootConfig{Rank: 1, Size: 2, Addr: addr, Secret: []byte(secret), Timeout: 5 * time.Second})
	if err == nil {
		second.Abort(1, "test over")
		t.Error("rank 1 joined twice")
	} else if !errors.Is(err, pmi.ErrProtocol) || !strings.Contains(err.Error(), "rank 1 is taken") {
		t.Errorf("rank 1 claimed again: %v, want ErrProtocol saying rank 1 is taken", err)
	}
	// At once, not by the 5 s timeout (4 s of slack for a starved machine).
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("refusing the second rank 1 took %v", d)
	}
	fencesFail(t, "of a job whose rank 1 was claimed twice", root, first)
	root.Abort(1, "test over")
	first.Abort(1, "test over")
}
