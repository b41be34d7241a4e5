package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
)

func TestCPUModel(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct{ text, want string }{
		{"processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n", "AMD EPYC 7B13"},
		{"processor\t: 0\nBogoMIPS\t: 50.00\n\nHardware\t: BCM2835\n", "BCM2835"},
		{"processor\t: 0\n", ""},
	} {
		if got := cpuModel(write("cpuinfo", tt.text)); got != tt.want {
			t.Errorf("cpuModel of %q = %q, want %q", tt.text, got, tt.want)
		}
	}
	if got := cpuModel(filepath.Join(dir, "absent")); got != "" {
		t.Errorf("no file: %q", got)
	}
}

func TestMachineLine(t *testing.T) {
	m := machine{cpu: "AMD EPYC", host: "h1", date: time.Date(2026, 11, 25, 2, 30, 0, 0, time.UTC)}
	s := m.String()
	for _, want := range []string{"mpgo " + mpgo.Version, "CPU AMD EPYC", "host h1", "2026-11-25 02:30 UTC"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
	if s := (machine{}).String(); !strings.Contains(s, "CPU model unknown") {
		t.Errorf("unknown CPU: %q", s)
	}
}
