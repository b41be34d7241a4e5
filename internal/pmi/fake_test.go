package pmi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// fakeLauncher is an in-test PMI-1 server: a key-value space and a
// barrier shared by the connections it serves, speaking the replies the
// way Hydra does (or Slurm, with slurm set: a missing key is rc=1).
type fakeLauncher struct {
	t     *testing.T
	n     int // processes in a barrier
	slurm bool
	// init overrides the reply to init (to test odd launchers).
	init string

	mu      sync.Mutex
	kv      map[string]string
	pending map[string]string
	waiting []chan struct{}
	log     []string // every request line, in order
	aborted int
	wg      sync.WaitGroup
}

func newFake(t *testing.T, n int) *fakeLauncher {
	return &fakeLauncher{t: t, n: n, kv: map[string]string{}, pending: map[string]string{}, aborted: -1}
}

// socketpair returns both ends of a Unix socket pair: the launcher's as a
// net.Conn, the process's as a descriptor number (PMI_FD).
func socketpair(t *testing.T) (net.Conn, int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "launcher")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	return c, fds[1]
}

// serve answers one process's requests on c until it finalizes or leaves.
func (f *fakeLauncher) serve(c net.Conn) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			f.mu.Lock()
			f.log = append(f.log, line)
			f.mu.Unlock()
			reply, last := f.answer(line)
			if reply != "" {
				if _, err := io.WriteString(c, reply+"\n"); err != nil {
					return
				}
			}
			if last {
				return
			}
		}
	}()
}

func fields(line string) map[string]string {
	m := map[string]string{}
	for _, w := range strings.Fields(line) {
		k, v, _ := strings.Cut(w, "=")
		m[k] = v
	}
	return m
}

func (f *fakeLauncher) answer(line string) (reply string, last bool) {
	m := fields(line)
	switch m["cmd"] {
	case "initack":
		return "cmd=initack\ncmd=set size=3\ncmd=set rank=2\ncmd=set debug=0", false
	case "init":
		if f.init != "" {
			return f.init, false
		}
		return "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0", false
	case "get_maxes":
		return "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024", false
	case "get_my_kvsname":
		return "cmd=my_kvsname kvsname=kvs_42_0", false
	case "put":
		if m["kvsname"] != "kvs_42_0" {
			return "cmd=put_result rc=-1 msg=unknown_kvsname", false
		}
		f.mu.Lock()
		f.pending[m["key"]] = m["value"]
		f.mu.Unlock()
		return "cmd=put_result rc=0 msg=success", false
	case "barrier_in":
		f.mu.Lock()
		ch := make(chan struct{})
		f.waiting = append(f.waiting, ch)
		if len(f.waiting) == f.n {
			for k, v := range f.pending {
				f.kv[k] = v
			}
			clear(f.pending)
			for _, w := range f.waiting {
				close(w)
			}
			f.waiting = nil
		}
		f.mu.Unlock()
		<-ch
		return "cmd=barrier_out", false
	case "get":
		f.mu.Lock()
		v, ok := f.kv[m["key"]]
		f.mu.Unlock()
		switch {
		case ok:
			return "cmd=get_result rc=0 msg=success value=" + v, false
		case f.slurm:
			return "cmd=get_result rc=1 msg=not_found", false
		default:
			return fmt.Sprintf("cmd=get_result rc=-1 msg=key_%s_not_found value=unknown", m["key"]), false
		}
	case "finalize":
		return "cmd=finalize_ack", true
	case "abort":
		f.mu.Lock()
		fmt.Sscan(m["exitcode"], &f.aborted)
		f.mu.Unlock()
		return "", true
	}
	return "cmd=error msg=unknown_command", false
}

func (f *fakeLauncher) wait() { f.wg.Wait() }

func (f *fakeLauncher) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}
