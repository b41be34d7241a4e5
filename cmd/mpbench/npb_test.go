package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeKernel is a stand-in NPB kernel: it prints print_results' layout
// with Mop/s proportional to the rank count (a perfect speedup), and fails
// verification on the ranks counts listed in FAIL_ON.
const fakeKernel = `package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

const failOn = %q

func main() {
	class := flag.String("class", "S", "")
	np := flag.Int("np", 4, "")
	flag.Parse()
	if os.Getenv("PMI_FD") != "" {
		fmt.Println("started as if under a launcher")
		os.Exit(3)
	}
	verdict := "SUCCESSFUL"
	if strings.Contains(failOn, fmt.Sprintf(",%%d,", *np)) {
		verdict = "UNSUCCESSFUL"
	}
	fmt.Printf("\n\n FAKE Benchmark Completed.\n")
	line := func(k string, v any) { fmt.Printf(" %%-15s = %%24v\n", k, v) }
	line("Class", *class)
	line("Time in seconds", fmt.Sprintf("%%.2f", 1.0/float64(*np)))
	line("Total processes", *np)
	line("Mop/s total", fmt.Sprintf("%%.2f", 100.0*float64(*np)))
	line("Verification", verdict)
	fmt.Printf("\n VERIFICATION %%s\n", verdict)
}
`

// fakeModule writes a module with the given kernels under examples/npb:
// each maps to the rank counts it fails to verify on (",2," style), or to
// "broken" for one that does not compile.
func fakeModule(t *testing.T, kernels map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(path, text string) {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module fake\n\ngo 1.26\n")
	for k, failOn := range kernels {
		src := strings.Replace(fakeKernel, "%q", `"`+failOn+`"`, 1)
		src = strings.ReplaceAll(src, "%%", "%")
		if failOn == "broken" {
			src = "package main\n\nfunc main() { undefined() }\n"
		}
		write(filepath.Join("examples", "npb", k, "main.go"), src)
	}
	return dir
}

func TestNPB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	dir := fakeModule(t, map[string]string{"ep": "", "is": ",2,", "mg": "broken"})
	t.Setenv("PMI_FD", "99") // as under mpiexec: the kernels must not see it
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"npb", "-dir", dir, "-np", "2,4", "-reps", "2"}, &stdout, &stderr, nil)
	out := stdout.String()
	t.Logf("output:\n%s", out)
	if err == nil || !strings.Contains(err.Error(), "is class S on 2 ranks: VERIFICATION UNSUCCESSFUL") {
		t.Errorf("error %v, want IS's unsuccessful verification", err)
	}
	for _, want := range []string{
		`(?m)^\s+EP\s+S\s+1\s+1\.00\s+100\.00\s+1\.00\s+100%\s+SUCCESSFUL$`,
		`(?m)^\s+EP\s+S\s+2\s+0\.50\s+200\.00\s+2\.00\s+100%\s+SUCCESSFUL$`,
		`(?m)^\s+EP\s+S\s+4\s+0\.25\s+400\.00\s+4\.00\s+100%\s+SUCCESSFUL$`,
		`(?m)^\s+IS\s+S\s+2\s+0\.50\s+200\.00\s+2\.00\s+100%\s+UNSUCCESSFUL$`,
		`(?m)^# cg: skipped, no `,
		`(?m)^# mg: skipped, does not build: `,
		`(?m)^# ft: skipped, no `,
		`(?m)^# mpbench npb: NAS Parallel Benchmarks class S on 1, 2, 4 goroutine ranks`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output lacks %s", want)
		}
	}
}

func TestNPBNoKernels(t *testing.T) {
	dir := fakeModule(t, nil)
	var stdout bytes.Buffer
	err := run(context.Background(), []string{"npb", "-dir", dir}, &stdout, &bytes.Buffer{}, nil)
	if err == nil || !strings.Contains(err.Error(), "no kernel found") {
		t.Errorf("error %v, want no kernel found", err)
	}
}

func TestNPBBadArgs(t *testing.T) {
	for _, args := range [][]string{
		{"-class", "Q"},
		{"-np", "1,x"},
		{"-np", "0"},
		{"-kernels", ""},
		{"-kernels", "../ep"},
		{"-reps", "0"},
		{"-timeout", "0s"},
		{"extra"},
		{"-nosuchflag"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"npb", "-dir", t.TempDir()}, args...), &bytes.Buffer{}, &stderr, nil)
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: error %v, want usage", args, err)
		}
	}
}

func TestParseNPB(t *testing.T) {
	// As examples/npb/internal/npb's Result.Print writes it.
	out := `

 CG Benchmark Completed.
 Class           =                        S
 Size            =                     1400
 Iterations      =                       15
 Time in seconds =                     0.05
 Total processes =                        4
 Mop/s total     =                  1234.56
 Mop/s/process   =                   308.64
 Operation type  =           floating point
 Verification    =               SUCCESSFUL
 Version         =               3.4 (mpgo)

 VERIFICATION SUCCESSFUL
`
	sec, mops, ok, err := parseNPB([]byte(out))
	if err != nil || sec != 0.05 || mops != 1234.56 || !ok {
		t.Errorf("parseNPB = %v, %v, %v, %v", sec, mops, ok, err)
	}
	bad := strings.Replace(out, "VERIFICATION SUCCESSFUL", "VERIFICATION UNSUCCESSFUL", 1)
	if _, _, ok, err := parseNPB([]byte(bad)); err != nil || ok {
		t.Errorf("unsuccessful: ok %v, err %v", ok, err)
	}
	for _, cut := range []string{" Time in seconds", " Mop/s total", " VERIFICATION"} {
		i := strings.Index(out, cut)
		if _, _, _, err := parseNPB([]byte(out[:i])); err == nil {
			t.Errorf("no error without %q", cut)
		}
	}
}

func TestPlainEnv(t *testing.T) {
	got := plainEnv([]string{"PATH=/bin", "PMI_FD=3", "PMI_RANK=0", "OMPI_COMM_WORLD_RANK=1", "SLURM_PROCID=2", "MPGO_NP=8", "HOME=/root"})
	if strings.Join(got, " ") != "PATH=/bin HOME=/root" {
		t.Errorf("plainEnv kept %q", got)
	}
}

// The table streams: each row is written as its run ends, before the
// next run starts (stdout and stderr share one writer here, so the
// progress lines on stderr mark when each run started).
func TestNPBStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	dir := fakeModule(t, map[string]string{"ep": ""})
	var out bytes.Buffer
	if err := run(context.Background(), []string{"npb", "-dir", dir, "-np", "2", "-kernels", "ep"}, &out, &out, nil); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Logf("output:\n%s", s)
	order := []string{
		"# mpbench npb: NAS Parallel Benchmarks class S",
		"mpbench npb: building ep",
		"mpbench npb: ep class S on 1 ranks, run 1 of 1",
		"100.00",
		"mpbench npb: ep class S on 2 ranks, run 1 of 1",
		"200.00",
	}
	at := 0
	for _, w := range order {
		i := strings.Index(s[at:], w)
		if i < 0 {
			t.Fatalf("no %q after offset %d: the rows do not stream in order", w, at)
		}
		at += i + len(w)
	}
	if !regexp.MustCompile(`(?m)^# mpgo v\S+, CPU .*, host .*, \d{4}-\d\d-\d\d \d\d:\d\d UTC$`).MatchString(s) {
		t.Errorf("no line with mpgo's version, the CPU, host and date")
	}
}

// Outside a checkout of mpgo the kernels' sources are found where the
// binary was built from, or the error names -dir.
func TestFindNPB(t *testing.T) {
	mod := func(name string, npb bool) string {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "go.mod"), []byte("module "+name+"\n\ngo 1.26\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if npb {
			if err := os.MkdirAll(filepath.Join(d, "examples", "npb", "ep"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(d, "sub", "dir"), 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	checkout, other := mod(mpgoModule, true), mod("example.com/mine", false)
	bare := t.TempDir()
	for _, tt := range []struct {
		name, wd, src, want string
	}{
		{"in a checkout", filepath.Join(checkout, "sub", "dir"), "", checkout},
		{"in another module, built from a checkout", filepath.Join(other, "sub"), checkout, checkout},
		{"outside any module, built from a checkout", bare, checkout, checkout},
		{"in another module, sources gone", other, "", ""},
		{"sources of another module", bare, other, ""},
		{"the checkout of this test", bare, sourceRoot(), sourceRoot()},
	} {
		got, err := findNPB(tt.wd, tt.src)
		switch {
		case tt.want == "" && (err == nil || !strings.Contains(err.Error(), "-dir")):
			t.Errorf("%s: %q, %v; want an error naming -dir", tt.name, got, err)
		case tt.want != "" && (err != nil || got != tt.want):
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}
