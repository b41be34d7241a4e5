package jobtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
)

// Spawn starts the running test binary n times, running no test or
// benchmark, as the processes of one job over TCP, each set up as
// Open MPI's mpirun sets up its processes (with MPGO_ROOT, an address on
// the loopback interface, and a fresh job secret), over TCP even between
// these processes of one host (MPGO_SHM=0), plus extra ("KEY=value"
// settings, which its TestMain reads to know what to do), and returns each
// process's output (stdout and stderr). The error of a process that
// failed carries its output.
func Spawn(n int, extra ...string) ([]string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	root := ln.Addr().String()
	ln.Close()
	secret := make([]byte, 16)
	rand.Read(secret)
	outs, errs := make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for p := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
			cmd.Env = append(append(os.Environ(), "MPGO_SHM=0"), extra...) // TCP unless extra says otherwise
			cmd.Env = append(cmd.Env,
				fmt.Sprintf("OMPI_COMM_WORLD_RANK=%d", p), fmt.Sprintf("OMPI_COMM_WORLD_SIZE=%d", n),
				fmt.Sprintf("OMPI_COMM_WORLD_LOCAL_RANK=%d", p), fmt.Sprintf("OMPI_COMM_WORLD_LOCAL_SIZE=%d", n),
				"MPGO_ROOT="+root, "MPGO_SECRET="+hex.EncodeToString(secret))
			out, err := cmd.CombinedOutput()
			outs[p] = string(out)
			if err != nil {
				errs[p] = fmt.Errorf("process %d: %v:\n%s", p, err, out)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return outs, err
		}
	}
	return outs, nil
}
