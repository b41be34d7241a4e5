package pmi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
)

// A job of Open MPI's mpirun whose processes all run on one host needs no
// MPGO_ROOT: process 0 serves the rendezvous on an abstract Unix socket
// named after the job (its PMIx namespace, which every process of it
// reads in its environment) and after the user, and both ends check with
// SO_PEERCRED that the other runs as the same user. That is the boundary
// that matters on one host (a process of the same user may read the
// job's memory anyway); a process of another user that takes the name
// first cannot pose as process 0, it only makes the job fail, with an
// error that says so. No secret is needed for the rendezvous itself, and
// the job secret the devices use is handed out through it as through any
// launcher's key-value space.

// localRendezvous returns the address of the local rendezvous of an Open
// MPI job that getenv describes, or ok false when its processes do not
// all run on this host or its environment names no job.
func localRendezvous(getenv func(string) string) (addr string, ok bool) {
	size, local := getenv("OMPI_COMM_WORLD_SIZE"), getenv("OMPI_COMM_WORLD_LOCAL_SIZE")
	if size == "" || size != local {
		return "", false
	}
	job := getenv("PMIX_NAMESPACE")
	if job == "" {
		job = getenv("OMPI_MCA_ess_base_jobid")
	}
	if job == "" {
		return "", false
	}
	h := sha256.Sum256([]byte("mpgo-root " + strconv.Itoa(os.Geteuid()) + " " + job))
	return "@mpgo-root-" + hex.EncodeToString(h[:16]), true
}

// PeerCred returns the uid (effective, at connect time) and pid of the
// process at c's other end, as the kernel knows them (SO_PEERCRED), not
// as the peer says.
func PeerCred(c *net.UnixConn) (uid uint32, pid int, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if cerr != nil {
		return 0, 0, cerr
	}
	return cred.Uid, int(cred.Pid), nil
}

// sameUser checks that c's peer runs as this process's user.
func sameUser(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("pmi: a %T is not a Unix connection: %w", c, ErrStranger)
	}
	uid, pid, err := PeerCred(uc)
	if err != nil {
		return fmt.Errorf("pmi: SO_PEERCRED: %w", err)
	}
	if uid != uint32(os.Geteuid()) {
		return fmt.Errorf("pmi: process %d runs as user %d, this one as %d: %w", pid, uid, os.Geteuid(), ErrStranger)
	}
	return nil
}

// sameUserListener accepts the connections of this process's user only;
// it closes the others and goes on waiting.
type sameUserListener struct{ net.Listener }

func (l sameUserListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if sameUser(c) == nil {
			return c, nil
		}
		c.Close()
	}
}
