//go:build !linux

package pmi

import (
	"errors"
	"fmt"
	"net"
)

// ErrStranger is wrapped by the errors of a local rendezvous whose other
// end runs as another user.
var ErrStranger = errors.New("pmi: the other end of the rendezvous runs as another user")

// localRendezvous: only Linux has abstract Unix sockets and SO_PEERCRED.
func localRendezvous(func(string) string) (string, bool) { return "", false }

func sameUser(c net.Conn) error {
	return fmt.Errorf("pmi: no peer credentials on this system: %w", ErrStranger)
}

type sameUserListener struct{ net.Listener }
