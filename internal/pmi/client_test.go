package pmi_test

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mpgo/mpgo/internal/pmi"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// The whole life of a process under a PMI_FD launcher: the exact lines on
// the wire, a put seen after the barrier, a missing key, finalize.
func TestClientPMIFD(t *testing.T) {
	for _, slurm := range []bool{false, true} {
		t.Run(fmt.Sprintf("slurm=%v", slurm), func(t *testing.T) {
			f := newFake(t, 1)
			f.slurm = slurm
			launcher, fd := socketpair(t)
			f.serve(launcher)
			defer f.wait()
			job, err := pmi.FromEnv(env("PMI_FD", strconv.Itoa(fd), "PMI_RANK", "0", "PMI_SIZE", "1",
				"MPI_LOCALRANKID", "0", "MPI_LOCALNRANKS", "1"))
			if err != nil {
				t.Fatal(err)
			}
			if job.Rank() != 0 || job.Size() != 1 || job.LocalRank() != 0 || job.LocalSize() != 1 {
				t.Errorf("rank %d size %d local %d/%d", job.Rank(), job.Size(), job.LocalRank(), job.LocalSize())
			}
			if err := job.Put("addr-0", "7f000001"); err != nil {
				t.Fatal(err)
			}
			if _, err := job.Get("addr-0"); !errors.Is(err, pmi.ErrNotFound) {
				t.Errorf("get before the fence: %v, want ErrNotFound", err)
			}
			if err := job.Fence(); err != nil {
				t.Fatal(err)
			}
			if v, err := job.Get("addr-0"); err != nil || v != "7f000001" {
				t.Errorf("get after the fence: %q, %v", v, err)
			}
			if _, err := job.Get("nokey"); !errors.Is(err, pmi.ErrNotFound) {
				t.Errorf("missing key: %v, want ErrNotFound", err)
			}
			if err := job.Finalize(); err != nil {
				t.Fatal(err)
			}
			if err := job.Put("k", "v"); !errors.Is(err, pmi.ErrClosed) {
				t.Errorf("put after finalize: %v", err)
			}
			f.wait()
			want := []string{
				"cmd=init pmi_version=1 pmi_subversion=1",
				"cmd=get_maxes",
				"cmd=get_my_kvsname",
				"cmd=put kvsname=kvs_42_0 key=addr-0 value=7f000001",
				"cmd=get kvsname=kvs_42_0 key=addr-0",
				"cmd=barrier_in",
				"cmd=get kvsname=kvs_42_0 key=addr-0",
				"cmd=get kvsname=kvs_42_0 key=nokey",
				"cmd=finalize",
			}
			if got := f.requests(); !slices.Equal(got, want) {
				t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// PMI_PORT mode: initack first, then rank and size from the set lines.
func TestClientPMIPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f := newFake(t, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			f.serve(c)
		}
	}()
	job, err := pmi.FromEnv(env("PMI_PORT", ln.Addr().String(), "PMI_ID", "5"))
	if err != nil {
		t.Fatal(err)
	}
	if job.Rank() != 2 || job.Size() != 3 {
		t.Errorf("rank %d of %d, want 2 of 3 (from the set lines)", job.Rank(), job.Size())
	}
	if err := job.Finalize(); err != nil {
		t.Fatal(err)
	}
	f.wait()
	if got := f.requests(); len(got) == 0 || got[0] != "cmd=initack pmiid=5" {
		t.Errorf("first request %q, want the initack", got)
	}
}

// Puts become visible to every process after the barrier.
func TestClientFenceAcrossProcesses(t *testing.T) {
	const n = 3
	f := newFake(t, n)
	defer f.wait()
	jobs := make([]pmi.Job, n)
	for i := range jobs {
		launcher, fd := socketpair(t)
		f.serve(launcher)
		var err error
		jobs[i], err = pmi.FromEnv(env("PMI_FD", strconv.Itoa(fd), "PMI_RANK", strconv.Itoa(i), "PMI_SIZE", strconv.Itoa(n)))
		if err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, job := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := job.Put(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)); err != nil {
				errs <- err
				return
			}
			if err := job.Fence(); err != nil {
				errs <- err
				return
			}
			for j := range n {
				if v, err := job.Get(fmt.Sprintf("k%d", j)); err != nil || v != fmt.Sprintf("v%d", j) {
					errs <- fmt.Errorf("process %d: get k%d: %q %v", i, j, v, err)
				}
			}
			errs <- job.Finalize()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestClientAbort(t *testing.T) {
	f := newFake(t, 1)
	launcher, fd := socketpair(t)
	f.serve(launcher)
	job, err := pmi.FromEnv(env("PMI_FD", strconv.Itoa(fd), "PMI_RANK", "0", "PMI_SIZE", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Abort(3, "rank failed"); err != nil {
		t.Fatal(err)
	}
	f.wait()
	if f.aborted != 3 {
		t.Errorf("launcher saw exit code %d, want 3", f.aborted)
	}
	job.Finalize() // the connection is gone: an error, not a hang
}

// Launchers differ in their init reply: any pmi_subversion is accepted,
// a failure or another version is not.
func TestClientInitReplies(t *testing.T) {
	tests := []struct {
		reply string
		ok    bool
	}{
		{"cmd=response_to_init pmi_version=1 pmi_subversion=0 rc=0", true},
		{"cmd=response_to_init pmi_version=1 pmi_subversion=7 rc=0", true},
		{"cmd=response_to_init rc=0", true},
		{"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1", false},
		{"cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0", false},
		{"cmd=maxes", false},
		{"garbage without fields", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.reply, func(t *testing.T) {
			f := newFake(t, 1)
			f.init = tt.reply
			if tt.reply == "" {
				f.init = "\n" // an empty line
			}
			launcher, fd := socketpair(t)
			f.serve(launcher)
			job, err := pmi.FromEnv(env("PMI_FD", strconv.Itoa(fd), "PMI_RANK", "0", "PMI_SIZE", "1"))
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				job.Finalize()
			} else if !errors.Is(err, pmi.ErrProtocol) {
				t.Errorf("got %v, want ErrProtocol", err)
			}
			f.wait()
		})
	}
}

// A launcher that hangs up mid-conversation: errors, no hang, no panic.
func TestClientLauncherGone(t *testing.T) {
	launcher, fd := socketpair(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 100)
		launcher.Read(buf)
		launcher.Write([]byte("cmd=response_to_init rc=0\n"))
		launcher.Read(buf)
		launcher.Close()
	}()
	_, err := pmi.FromEnv(env("PMI_FD", strconv.Itoa(fd), "PMI_RANK", "0", "PMI_SIZE", "1"))
	if !errors.Is(err, pmi.ErrProtocol) {
		t.Errorf("got %v, want ErrProtocol", err)
	}
	<-done
}

func TestClientBadWords(t *testing.T) {
	f := newFake(t, 1)
	launcher, fd := socketpair(t)
	f.serve(launcher)
	defer f.wait()
	job, err := pmi.FromEnv(env("PMI_FD", strconv.Itoa(fd), "PMI_RANK", "0", "PMI_SIZE", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer job.Finalize()
	for _, kv := range [][2]string{{"a b", "v"}, {"k", "a b"}, {"k", "x=y"}, {"", "v"}, {"k", ""},
		{"k", "caf\u00e9"}, {strings.Repeat("k", 65), "v"}, {"k", strings.Repeat("v", 1025)}} {
		if err := job.Put(kv[0], kv[1]); !errors.Is(err, pmi.ErrArg) {
			t.Errorf("Put(%q, %q) = %v, want ErrArg", kv[0], kv[1], err)
		}
	}
}

func TestDetectAndFromEnvErrors(t *testing.T) {
	tests := []struct {
		name   string
		env    func(string) string
		want   pmi.Launcher
		errHas string
	}{
		{"plain", env(), pmi.None, "no PMI_FD"},
		{"hydra", env("PMI_FD", "-1", "PMI_RANK", "0", "PMI_SIZE", "1"), pmi.PMI, "PMI_FD"},
		{"bad fd", env("PMI_FD", "x", "PMI_RANK", "0", "PMI_SIZE", "1"), pmi.PMI, "PMI_FD"},
		{"bad rank", env("PMI_FD", "3", "PMI_RANK", "zero", "PMI_SIZE", "1"), pmi.PMI, "PMI_RANK"},
		{"srun without pmi", env("SLURM_PROCID", "1", "SLURM_STEP_NUM_TASKS", "4"), pmi.Slurm, "--mpi=pmi2"},
		{"sbatch shell", env("SLURM_PROCID", "0", "SLURM_NTASKS", "1"), pmi.None, "no PMI_FD"},
		{"open mpi without root", env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2"), pmi.OpenMPI, "MPGO_ROOT"},
		// Without a secret anyone who reaches MPGO_ROOT could join as a
		// rank: refused unless MPGO_INSECURE=1 says so.
		{"open mpi without secret", env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1", "MPGO_ROOT", "127.0.0.1:0"), pmi.OpenMPI, "MPGO_SECRET"},
		{"open mpi with a short secret", env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1", "MPGO_ROOT", "127.0.0.1:0", "MPGO_SECRET", "test"), pmi.OpenMPI, "MPGO_SECRET"},
		{"pmi port refused", env("PMI_PORT", "127.0.0.1:1", "PMI_ID", "0"), pmi.PMI, "PMI_PORT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pmi.Detect(tt.env); got != tt.want {
				t.Errorf("Detect = %v, want %v", got, tt.want)
			}
			job, err := pmi.FromEnv(tt.env)
			if err == nil {
				job.Finalize()
				t.Fatal("FromEnv succeeded")
			}
			if !errors.Is(err, pmi.ErrNoLauncher) || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("FromEnv: %v; want ErrNoLauncher mentioning %q", err, tt.errHas)
			}
		})
	}
}

func TestMemory(t *testing.T) {
	jobs := pmi.NewMemory(2)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.Put(fmt.Sprintf("k%d", i), "v")
			if err := j.Fence(); err != nil {
				t.Error(err)
			}
			if _, err := j.Get(fmt.Sprintf("k%d", 1-i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	jobs[0].Abort(2, "")
	if err := jobs[1].Fence(); !errors.Is(err, pmi.ErrProtocol) {
		t.Errorf("fence after an abort: %v", err)
	}
}
