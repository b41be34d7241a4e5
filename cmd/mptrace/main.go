// Command mptrace merges the trace files that the processes of an mpgo
// job wrote (MPGO_TRACE=file under a launcher: file.0.json,
// file.1.json, …) into one trace, which ui.perfetto.dev opens: every
// process's ranks on one time axis, and a flow from each send to the
// receive that matched it, between processes too.
//
// Usage:
//
//	mptrace [-o merged.json] trace.0.json trace.1.json …
//
// The files are aligned by the wall-clock time each process started its
// clock at: exact for processes on one host, as good as the hosts'
// clocks agree otherwise.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mpgo/mpgo/internal/trace"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mptrace:", err)
		os.Exit(1)
	}
}

// errUsage is wrapped by the errors of a command line mptrace cannot run.
var errUsage = errors.New("usage: mptrace [-o merged.json] trace.0.json trace.1.json …")

// run merges the files args name into -o's file (standard output, stdout,
// when none).
func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("mptrace", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "the merged trace's file (default: standard output)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() == 0 {
		return errUsage
	}
	var files []*trace.File
	for _, name := range fs.Args() {
		f, err := readFile(name)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	merged, err := trace.Merge(files)
	if err != nil {
		return err
	}
	if *out == "" {
		return trace.WriteFile(stdout, merged)
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	err = trace.WriteFile(f, merged)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readFile reads the trace file name.
func readFile(name string) (*trace.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := trace.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}
