package pmi

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/mpgo/mpgo/comm/device"
)

// The job secret: random bytes that process 0 draws and every process
// learns through the launcher's key-value store, with which the backends
// prove that a peer belongs to the job (the TCP backend's handshake, the
// RDMA backend's frame tokens). Only the job's processes can read the
// store (and whoever the launcher lets in, as for the addresses in it).

// SecretSize is the size in bytes of the secret [PutSecret] draws.
const SecretSize = 32

// minSecret is the smallest secret [Secret] accepts.
const minSecret = 16

// PutSecret draws a job secret and puts it in kv under key, in process 0
// (the others put nothing); every process then reads it with [Secret]
// after kv.Fence. Errors wrap device.ErrBootstrap.
func PutSecret(kv device.KV, key string) error {
	if kv.Rank() != 0 {
		return nil
	}
	secret := make([]byte, SecretSize)
	rand.Read(secret)
	if err := kv.Put(key, hex.EncodeToString(secret)); err != nil {
		return fmt.Errorf("%w: %w", device.ErrBootstrap, err)
	}
	return nil
}

// Secret returns the job secret process 0 put in kv under key
// ([PutSecret]), once kv.Fence returned. Errors wrap device.ErrBootstrap.
func Secret(kv device.KV, key string) ([]byte, error) {
	s, err := kv.Get(key)
	if err != nil {
		return nil, fmt.Errorf("%w: the job secret: %w", device.ErrBootstrap, err)
	}
	secret, err := hex.DecodeString(s)
	if err != nil || len(secret) < minSecret {
		return nil, fmt.Errorf("%w: a malformed job secret", device.ErrBootstrap)
	}
	return secret, nil
}
