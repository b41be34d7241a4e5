//go:build unix

package mpgo_test

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own. A test that
// stops one of the processes it started must: were the stopped process in
// an orphaned process group (the test's own, when whatever started the
// test runs in another session), the kernel would send that group SIGHUP
// and SIGCONT as soon as any other member exited, and the stopped process
// would run on.
func ownProcessGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
