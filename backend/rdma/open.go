//go:build rdma

package rdma

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/mpgo/mpgo/backend/rdma/internal/fabric"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/pmi"
)

// Key names of the RDMA backend in the launcher's key-value store.
const (
	keyFabricAddr   = "mpgo-fabric-"       // + process: its endpoint name (fi_getname), hex
	keyFabricProv   = "mpgo-fabric-prov"   // process 0: its provider
	keyFabricSecret = "mpgo-fabric-secret" // process 0: the job secret, hex (pmi.PutSecret)
)

// Open opens this process's RDMA device of the job whose key-value store
// is kv: a libfabric endpoint (FI_EP_RDM) of the provider cfg names, or of
// the one FI_PROVIDER names, or of the best the machine offers. Each
// process publishes its endpoint's name in kv, process 0 its provider and
// a job secret too, waits (kv.Fence) until every process did, and inserts
// the others' names into its address vector. Every frame carries a token
// made from the secret that proves which process of the job sent it
// (see the package documentation). The device starts when the world
// does.
//
// Errors wrap [device.ErrBootstrap]; when no provider fits they wrap
// [device.ErrNotSupported] too. Built without the rdma tag it always
// fails with ErrNotSupported.
func Open(kv device.KV, cfg Config) (*Device, error) {
	procs, self := kv.Size(), kv.Rank()
	if cfg.Layout.Owner == nil || cfg.Layout.Ranks < procs {
		return nil, fmt.Errorf("%w: a layout of %d ranks over %d processes: %w", device.ErrBootstrap, cfg.Layout.Ranks, procs, device.ErrArg)
	}
	eager := 0 // the provider's default
	if cfg.EagerLimit > 0 {
		eager = min(cfg.EagerLimit, MaxEagerLimit)
	}
	dev, err := newDevice(fabric.Config{Provider: cfg.Provider, Domain: cfg.Domain}, self, procs, cfg.Layout, eager)
	if err != nil {
		if errors.Is(err, fabric.ErrNoProvider) {
			return nil, fmt.Errorf("%w: %w: %w", device.ErrBootstrap, device.ErrNotSupported, err)
		}
		return nil, fmt.Errorf("%w: %w", device.ErrBootstrap, err)
	}
	ok := false
	defer func() {
		if !ok {
			dev.Close()
		}
	}()
	name, err := dev.ep.Name()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", device.ErrBootstrap, err)
	}
	put := func(key, value string) error {
		if err := kv.Put(key, value); err != nil {
			return fmt.Errorf("%w: %w", device.ErrBootstrap, err)
		}
		return nil
	}
	if err := put(keyFabricAddr+strconv.Itoa(self), hex.EncodeToString(name)); err != nil {
		return nil, err
	}
	if self == 0 {
		if err := put(keyFabricProv, dev.info.Provider); err != nil {
			return nil, err
		}
	}
	if err := pmi.PutSecret(kv, keyFabricSecret); err != nil {
		return nil, err
	}
	if err := kv.Fence(); err != nil {
		return nil, fmt.Errorf("%w: %w", device.ErrBootstrap, err)
	}
	if s, err := kv.Get(keyFabricProv); err != nil || s != dev.info.Provider {
		return nil, fmt.Errorf("%w: process 0 uses provider %q, this one %q (%v)", device.ErrBootstrap, s, dev.info.Provider, err)
	}
	secret, err := pmi.Secret(kv, keyFabricSecret)
	if err != nil {
		return nil, err
	}
	names := make([][]byte, procs)
	for p := range procs {
		v, err := kv.Get(keyFabricAddr + strconv.Itoa(p))
		if err != nil {
			return nil, fmt.Errorf("%w: the address of process %d: %w", device.ErrBootstrap, p, err)
		}
		if names[p], err = hex.DecodeString(v); err != nil {
			return nil, fmt.Errorf("%w: the address of process %d: %q", device.ErrBootstrap, p, v)
		}
	}
	if err := dev.connect(names, secret); err != nil {
		return nil, fmt.Errorf("%w: %w", device.ErrBootstrap, err)
	}
	ok = true
	return dev, nil
}

// Info describes the provider the device uses: its name, domain and
// memory registration mode, and the device's eager limit.
func (d *Device) Info() string {
	i := d.info
	return fmt.Sprintf("provider %s, fabric %s, domain %s, mr_mode %s, thread safe %v, write ordered %v, eager limit %d, large eager sends uncopied %v",
		i.Provider, i.Fabric, i.Domain, i.MRMode, i.ThreadSafe, i.WriteOrdered, d.eager, d.lend)
}

// LendsEager reports whether the device sends eager messages too large
// for a batch from the caller's buffer.
func (d *Device) LendsEager() bool { return d.lend }
