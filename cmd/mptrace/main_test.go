package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/mpgo/mpgo/comm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMergeUsage(t *testing.T) {
	if err := run(nil, &bytes.Buffer{}); !errors.Is(err, errUsage) {
		t.Fatalf("no files: %v", err)
	}
	if err := run([]string{"-x"}, &bytes.Buffer{}); !errors.Is(err, errUsage) {
		t.Fatalf("bad flag: %v", err)
	}
	if err := run([]string{filepath.Join(t.TempDir(), "none.json")}, &bytes.Buffer{}); err == nil {
		t.Fatal("a missing file merged")
	}
}

// TestMergeOneRun merges the trace of a run of two ranks, one of which
// sends the other a message: the merged trace has its flow. (Traces of
// several processes are merged in internal/trace's tests and in the root
// package's launcher test.)
func TestMergeOneRun(t *testing.T) {
	w, err := comm.NewWorld(2, comm.Config{Observe: comm.Observe{Trace: true}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	for r := range 2 {
		go func() {
			c := w.Comm(r)
			buf := make([]byte, 8)
			if r == 0 {
				done <- c.Send(buf, comm.Byte, 1, 3)
				return
			}
			_, err := c.Recv(buf, comm.Byte, 0, 3)
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	path := filepath.Join(t.TempDir(), "t.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTrace(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out := filepath.Join(t.TempDir(), "merged.json")
	if err := run([]string{"-o", out, path}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"ph":"s"`); n != 1 {
		t.Fatalf("%d flows in the merged trace, want 1:\n%s", n, b)
	}
}
