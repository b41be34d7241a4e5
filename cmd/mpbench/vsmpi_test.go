package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestVsMPIAbsent: without mpicc, --vs-mpi says so and the run goes on.
func TestVsMPIAbsent(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := append([]string{"latency", "--vs-mpi", "-mpicc", "/nonexistent/mpicc"}, tiny...)
	if err := run(context.Background(), args, &stdout, &stderr, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "/nonexistent/mpicc not found") {
		t.Errorf("stderr does not say mpicc is missing: %q", stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "# --vs-mpi: /nonexistent/mpicc not found") {
		t.Errorf("the table does not say mpicc is missing:\n%s", out)
	}
	if tableRows(out) != 8+1 || strings.Contains(out, "MPI µs") {
		t.Errorf("unexpected table:\n%s", out)
	}
}

// TestVsMPI builds and runs the C program when an MPI is installed
// (apt-get install mpich), and checks its figures reach the table.
func TestVsMPI(t *testing.T) {
	if _, err := exec.LookPath("mpicc"); err != nil {
		t.Skip("mpicc not on PATH")
	}
	if _, err := exec.LookPath("mpiexec"); err != nil {
		t.Skip("mpiexec not on PATH")
	}
	ctx := context.Background()
	m, note := setupMPI(ctx, "mpicc", "mpiexec", time.Minute)
	if m == nil {
		t.Fatalf("setup: %s", note)
	}
	defer m.close()
	o := tinyOptions(t)
	o.vsMPI = true
	r := &runner{o: o, be: goroutines{}, prog: &progress{}, mpi: m}
	// Every benchmark, so that the C program's definitions are all run
	// (with -short, one point-to-point and one collective).
	for _, b := range benchmarks {
		t.Run(b.name, func(t *testing.T) {
			if testing.Short() && b.name != "latency" && b.name != "allreduce" {
				t.Skip("-short")
			}
			res, err := r.run(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			if res.mpi == "" {
				t.Fatalf("no MPI figures; notes: %q", res.notes)
			}
			for _, row := range res.rows {
				for _, m := range b.figures {
					s := row.mpi[m]
					zeroOK := (m == mBW || m == mRate) && row.plan.Size == 0
					if s.N != o.reps || !(s.Min > 0 || zeroOK) {
						t.Errorf("%d bytes: MPI %v = %+v", row.plan.Size, m, s)
					}
				}
			}
			var out bytes.Buffer
			if err := writeTable(&out, res); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "vs "+res.mpi) {
				t.Errorf("no MPI column:\n%s", out.String())
			}
		})
	}
}

func TestParseMPIOutput(t *testing.T) {
	const good = `V MPICH Version:	4.0.2
some warning from the library
R 0 0 0 1.5 0 0 0 0
R 0 1 8 1.25 1 2 6.4 800000
R 1 0 0 1.75 0 0 0 0
R 1 1 8 1.5 1 2 5.3 700000
`
	version, out, err := parseMPIOutput(strings.NewReader(good), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if version != "MPICH Version: 4.0.2" || libraryLabel(version) != "MPICH" {
		t.Errorf("version %q, label %q", version, libraryLabel(version))
	}
	if out[1][1] != (sample{1.5, 1, 2, 5.3, 700000}) || out[0][0][mLat] != 1.5 {
		t.Errorf("parsed %v", out)
	}
	for name, bad := range map[string]string{
		"missing":  "R 0 0 0 1 0 0 0 0\n",
		"short":    "R 0 0 0 1 0 0\n",
		"range":    "R 0 5 0 1 0 0 0 0\n",
		"notfloat": "R 0 0 0 x 0 0 0 0\nR 0 1 8 1 0 0 0 0\n",
	} {
		if _, _, err := parseMPIOutput(strings.NewReader(bad), 1, 2); err == nil {
			t.Errorf("%s: parsed %q", name, bad)
		}
	}
}

func TestLibraryLabel(t *testing.T) {
	for v, want := range map[string]string{
		"MPICH Version: 4.0.2":                     "MPICH",
		"Open MPI v4.1.4, package: Debian OpenMPI": "Open MPI",
		"Intel(R) MPI Library 2021.6":              "Intel MPI",
		"MVAPICH2 Version 2.3.7":                   "MVAPICH",
		"":                                         "MPI",
	} {
		if got := libraryLabel(v); got != want {
			t.Errorf("libraryLabel(%q) = %q, want %q", v, got, want)
		}
	}
}
