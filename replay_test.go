package mpgo_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// farm is an AnySource task farm: rank 0 hands tasks to the workers and
// takes each result from whichever worker is done first (Iprobe polled
// until a result is there, then Recv from AnySource), and at the end
// collects one last message from each worker with WaitAny. Worker w
// takes delay(w, task) per task. What rank 0 saw — each source, how many
// polls failed before it, each WaitAny index — is its trace of the run,
// written to *seen.
func farm(tasks int, delay func(w, task int) time.Duration, seen *[]string) func(c *comm.Comm) error {
	const tagTask, tagResult, tagBye = 1, 2, 3
	return func(c *comm.Comm) error {
		buf := make([]byte, 8)
		if c.Rank() != 0 {
			for {
				st, err := c.Recv(buf, comm.Byte, 0, comm.AnyTag)
				if err != nil {
					return err
				}
				if st.Tag == tagBye {
					return c.Send(buf, comm.Byte, 0, tagBye)
				}
				time.Sleep(delay(c.Rank(), int(buf[0])))
				if err := c.Send(buf, comm.Byte, 0, tagResult); err != nil {
					return err
				}
			}
		}
		workers := c.Size() - 1
		next := 0
		for w := 1; w <= workers; w++ {
			buf[0] = byte(next)
			next++
			if err := c.Send(buf, comm.Byte, w, tagTask); err != nil {
				return err
			}
		}
		for done := 0; done < tasks; done++ {
			polls := 0
			for {
				_, ok, err := c.Iprobe(comm.AnySource, tagResult)
				if err != nil {
					return err
				}
				if ok {
					break
				}
				polls++
				time.Sleep(20 * time.Microsecond)
			}
			st, err := c.Recv(buf, comm.Byte, comm.AnySource, tagResult)
			if err != nil {
				return err
			}
			*seen = append(*seen, fmt.Sprintf("%d/%d", st.Source, polls))
			tag := tagTask
			if next >= tasks {
				tag = tagBye
			}
			buf[0] = byte(next)
			next++
			if err := c.Send(buf, comm.Byte, st.Source, tag); err != nil {
				return err
			}
		}
		rs := make([]*comm.Request, workers)
		for w := range rs {
			var err error
			if rs[w], err = c.Irecv(make([]byte, 8), comm.Byte, w+1, tagBye); err != nil {
				return err
			}
		}
		for range rs {
			// A copy: the deadlock detector may still read the slice a
			// WaitAny parked on after it returned (engine, world.go's
			// detect), so setting rs[i] to nil raced with it.
			i, _, err := comm.WaitAny(slices.Clone(rs)...)
			if err != nil {
				return err
			}
			rs[i] = nil
			*seen = append(*seen, fmt.Sprintf("any %d", i))
		}
		return nil
	}
}

// A farm of 9 ranks recorded once replays 100 times with exactly the
// recorded outcomes, although the replays run with other delays, under
// which a live run takes other paths.
func TestRecordReplayFarm(t *testing.T) {
	const ranks, tasks = 9, 40
	dir := t.TempDir()
	recorded := func(w, task int) time.Duration { return time.Duration((w*7+task*3)%5) * 100 * time.Microsecond }
	perturbed := func(w, task int) time.Duration { return time.Duration((ranks-w)*(task%3)) * 40 * time.Microsecond }
	var want []string
	if err := mpgo.Run(ranks, farm(tasks, recorded, &want), mpgo.WithRecord(dir)); err != nil {
		t.Fatal(err)
	}
	if len(want) != tasks+ranks-1 {
		t.Fatalf("recorded %d outcomes, want %d", len(want), tasks+ranks-1)
	}
	runs := 100
	if testing.Short() {
		runs = 10
	}
	differs := 0
	for i := range runs {
		var got []string
		if err := mpgo.Run(ranks, farm(tasks, perturbed, &got), mpgo.WithReplay(dir)); err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("replay %d saw\n%v\nrecorded\n%v", i, got, want)
		}
		if i < 3 { // the same delays live: another path, or the test proves nothing
			var live []string
			if err := mpgo.Run(ranks, farm(tasks, perturbed, &live)); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(live, want) {
				differs++
			}
		}
	}
	if differs == 0 {
		t.Fatal("live runs with the replays' delays took the recorded path: the replays proved nothing")
	}
}

func TestReplayWithoutLog(t *testing.T) {
	ok := func(*comm.Comm) error { return nil }
	if err := mpgo.Run(2, ok, mpgo.WithReplay(t.TempDir())); !errors.Is(err, comm.ErrArg) {
		t.Fatalf("replay of a directory without logs: %v, want ErrArg", err)
	}
	dir := t.TempDir()
	if err := mpgo.Run(3, ok, mpgo.WithRecord(dir)); err != nil {
		t.Fatal(err)
	}
	if err := mpgo.Run(2, ok, mpgo.WithReplay(dir)); !errors.Is(err, comm.ErrArg) {
		t.Fatalf("replay on 2 ranks of a recording on 3: %v, want ErrArg", err)
	}
}

// calls is a program whose rank 0 meets every kind of outcome that
// record/replay logs: a Probe from AnySource, Irecvs from AnySource
// polled with TestAny, receives waited for with WaitSome, an Irecv from
// AnySource polled with Test. Each worker sends 4 messages, the nth after
// delay(worker, n). Rank 0's trace of what it saw goes to *seen.
func calls(delay func(w, n int) time.Duration, seen *[]string) func(c *comm.Comm) error {
	return func(c *comm.Comm) error {
		workers := c.Size() - 1
		if c.Rank() != 0 {
			for n := range 4 {
				time.Sleep(delay(c.Rank(), n))
				if err := c.Send([]byte{byte(c.Rank())}, comm.Byte, 0, n); err != nil {
					return err
				}
			}
			return nil
		}
		note := func(f string, a ...any) { *seen = append(*seen, fmt.Sprintf(f, a...)) }
		buf := make([]byte, 1)
		for range workers { // tag 0: probe, then receive what it found
			st, err := c.Probe(comm.AnySource, 0)
			if err != nil {
				return err
			}
			if _, err := c.Recv(buf, comm.Byte, st.Source, 0); err != nil {
				return err
			}
			note("probe %d", st.Source)
		}
		rs := make([]*comm.Request, workers) // tag 1: Irecv from AnySource, TestAny
		bufs := make([][]byte, workers)
		for i := range rs {
			bufs[i] = make([]byte, 1)
			var err error
			if rs[i], err = c.Irecv(bufs[i], comm.Byte, comm.AnySource, 1); err != nil {
				return err
			}
		}
		for left, polls := workers, 0; left > 0; {
			i, st, ok, err := comm.TestAny(rs...)
			if err != nil {
				return err
			}
			if !ok {
				polls++
				time.Sleep(10 * time.Microsecond)
				continue
			}
			note("testany %d from %d after %d", i, st.Source, polls)
			rs[i], polls = nil, 0
			left--
		}
		for i := range rs { // tag 2: from each worker, WaitSome
			var err error
			if rs[i], err = c.Irecv(bufs[i], comm.Byte, i+1, 2); err != nil {
				return err
			}
		}
		for left := workers; left > 0; {
			done, err := comm.WaitSome(slices.Clone(rs)...) // a copy: see farm
			if err != nil {
				return err
			}
			for _, i := range done {
				rs[i] = nil
			}
			left -= len(done)
			note("waitsome %v", done)
		}
		for range workers { // tag 3: Irecv from AnySource, Test
			r, err := c.Irecv(buf, comm.Byte, comm.AnySource, 3)
			if err != nil {
				return err
			}
			polls := 0
			for {
				st, ok, err := r.Test()
				if err != nil {
					return err
				}
				if ok {
					note("test from %d after %d", st.Source, polls)
					break
				}
				polls++
				time.Sleep(10 * time.Microsecond)
			}
		}
		return nil
	}
}

func TestRecordReplayCalls(t *testing.T) {
	const ranks = 5
	dir := t.TempDir()
	recorded := func(w, n int) time.Duration { return time.Duration((w*5+n*3)%7) * 60 * time.Microsecond }
	perturbed := func(w, n int) time.Duration { return time.Duration((ranks-w)*(n+1)%7) * 50 * time.Microsecond }
	var want []string
	if err := mpgo.Run(ranks, calls(recorded, &want), mpgo.WithRecord(dir)); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		var got []string
		if err := mpgo.Run(ranks, calls(perturbed, &got), mpgo.WithReplay(dir)); err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("replay %d saw\n%v\nrecorded\n%v", i, got, want)
		}
	}
}

// farmDelays are the farm's delays of TestRecordReplayFarm, by name.
var farmDelays = map[string]func(w, task int) time.Duration{
	"farm-recorded":  func(w, task int) time.Duration { return time.Duration((w*7+task*3)%5) * 100 * time.Microsecond },
	"farm-perturbed": func(w, task int) time.Duration { return time.Duration((4-w)*(task%3)) * 300 * time.Microsecond },
}

// farmMain runs the farm under mpgo.Main with the delays mode names, and
// rank 0 writes what it saw to the file MPGO_TEST_SEEN names.
func farmMain(mode string) {
	mpgo.Main(func(c *comm.Comm) error {
		var seen []string
		if err := farm(24, farmDelays[mode], &seen)(c); err != nil {
			return err
		}
		if c.Rank() != 0 {
			return nil
		}
		return os.WriteFile(os.Getenv("MPGO_TEST_SEEN"), []byte(strings.Join(seen, "\n")), 0o644)
	})
}

// Under MPICH's mpiexec, 4 processes: the farm recorded with one set of
// delays replays with another to the same outcomes, three times.
func TestRecordReplayUnderMPIExec(t *testing.T) {
	mpiexec := needMPIExec(t)
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	run := func(mode, env, seen string) string {
		t.Helper()
		vars := []string{helperEnv + "=" + mode, env, "MPGO_TEST_SEEN=" + seen}
		if out, code := runProgram(t, time.Minute, vars, mpiexec, "-n", "4", os.Args[0]); code != 0 {
			t.Fatalf("%s: exit status %d:\n%s", mode, code, out)
		}
		b, err := os.ReadFile(seen)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := run("farm-recorded", "MPGO_RECORD="+logs, filepath.Join(dir, "recorded"))
	if strings.Count(want, "\n") < 24 {
		t.Fatalf("recorded:\n%s", want)
	}
	for i := range 3 {
		if got := run("farm-perturbed", "MPGO_REPLAY="+logs, filepath.Join(dir, fmt.Sprint("replay", i))); got != want {
			t.Fatalf("replay %d saw\n%s\nrecorded\n%s", i, got, want)
		}
	}
}
