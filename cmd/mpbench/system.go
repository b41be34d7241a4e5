package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mpgo/mpgo"
)

// machine is what a report's header says about where and when it was
// measured, beside the load average: figures are worth comparing only
// with their CPU, mpgo's version and the date at hand.
type machine struct {
	cpu  string // the processor's model, "" when the system does not tell
	host string
	date time.Time
}

// thisMachine describes this machine now.
func thisMachine() machine {
	host, _ := os.Hostname()
	return machine{cpu: cpuModel("/proc/cpuinfo"), host: host, date: time.Now().UTC()}
}

// String is a header line's worth: "mpgo v0.2.0, CPU AMD EPYC, host h,
// 2026-11-25 02:30 UTC".
func (m machine) String() string {
	cpu := m.cpu
	if cpu == "" {
		cpu = "model unknown"
	}
	host := m.host
	if host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("mpgo %s, CPU %s, host %s, %s", mpgo.Version, cpu, host, m.date.Format("2006-01-02 15:04 MST"))
}

// cpuModel reads the processor's model from a /proc/cpuinfo file: the
// first "model name" (x86), else "Hardware" or "cpu model" (ARM, MIPS),
// else "" (no such file, or no such line).
func cpuModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	found := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if ok && v != "" && found[k] == "" {
			found[k] = v
		}
	}
	for _, k := range []string{"model name", "Hardware", "cpu model"} {
		if v := found[k]; v != "" {
			return v
		}
	}
	return ""
}
