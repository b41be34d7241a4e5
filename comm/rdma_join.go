//go:build rdma

package comm

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/mpgo/mpgo/comm/internal/fabric"
	"github.com/mpgo/mpgo/comm/internal/pmi"
)

// Key names of the RDMA backend in the launcher's key-value store.
const (
	keyFabricAddr = "mpgo-fabric-"     // + process: its endpoint name (fi_getname), hex
	keyFabricProv = "mpgo-fabric-prov" // process 0: its provider
)

// JoinFabricJob joins the job the launcher that started this process
// runs, as [JoinJob] does, with the RDMA backend: the processes talk over
// a libfabric endpoint (FI_EP_RDM) of the provider cfg names, or of the
// one FI_PROVIDER names, or of the best the machine offers. Each process
// publishes its endpoint's name through the launcher's key-value store
// and inserts the others' into its address vector.
//
// Errors wrap ErrBootstrap; when no provider fits they wrap
// ErrNotSupported too. Built without the rdma tag it always fails with
// ErrNotSupported.
func JoinFabricJob(cfg FabricConfig) (*Job, error) {
	return bootstrap(cfg.JobConfig, func(kv pmi.Job, jc JobConfig, _ func(string) string) (*Job, error) {
		cfg.JobConfig = jc
		return joinFabricKV(kv, cfg)
	})
}

// joinFabricKV joins the job whose key-value space kv is over the fabric.
func joinFabricKV(kv pmi.Job, cfg FabricConfig) (*Job, error) {
	procs, self := kv.Size(), kv.Rank()
	k := cfg.RanksPerProcess
	if k < 1 || procs*k > 1<<24 {
		return nil, fmt.Errorf("%w: %d ranks per process: %w", ErrBootstrap, k, ErrArg)
	}
	eager := 0 // the provider's default
	if cfg.EagerLimit > 0 {
		eager = min(cfg.EagerLimit, MaxFabricEagerLimit)
	}
	owner := func(rank int) int { return rank / k }
	dev, err := newRDMADevice(fabric.Config{Provider: cfg.Provider, Domain: cfg.Domain}, self, procs, owner, eager)
	if err != nil {
		if errors.Is(err, fabric.ErrNoProvider) {
			return nil, fmt.Errorf("%w: %w: %w", ErrBootstrap, ErrNotSupported, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrBootstrap, err)
	}
	ok := false
	defer func() {
		if !ok {
			dev.Close()
		}
	}()
	name, err := dev.ep.Name()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBootstrap, err)
	}
	put := func(key, value string) error {
		if err := kv.Put(key, value); err != nil {
			return fmt.Errorf("%w: %w", ErrBootstrap, err)
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
		if err := put(keyLayout, strconv.Itoa(k)); err != nil {
			return nil, err
		}
	}
	if err := kv.Fence(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBootstrap, err)
	}
	if s, err := kv.Get(keyLayout); err != nil || s != strconv.Itoa(k) {
		return nil, fmt.Errorf("%w: process 0 runs %s ranks per process, this one %d (%v)", ErrBootstrap, s, k, err)
	}
	if s, err := kv.Get(keyFabricProv); err != nil || s != dev.info.Provider {
		return nil, fmt.Errorf("%w: process 0 uses provider %q, this one %q (%v)", ErrBootstrap, s, dev.info.Provider, err)
	}
	names := make([][]byte, procs)
	for p := range procs {
		v, err := kv.Get(keyFabricAddr + strconv.Itoa(p))
		if err != nil {
			return nil, fmt.Errorf("%w: the address of process %d: %w", ErrBootstrap, p, err)
		}
		if names[p], err = hex.DecodeString(v); err != nil {
			return nil, fmt.Errorf("%w: the address of process %d: %q", ErrBootstrap, p, v)
		}
	}
	if err := dev.connect(names); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBootstrap, err)
	}
	ranks := make([]int, k)
	for i := range ranks {
		ranks[i] = self*k + i
	}
	w, err := NewWorld(procs*k, Config{EagerLimit: cfg.EagerLimit, Local: ranks, Device: dev, Process: owner})
	if err != nil {
		return nil, err
	}
	dev.w = w
	if err := dev.start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("%w: %w", ErrBootstrap, err)
	}
	ok = true
	return &Job{world: w, dev: dev, kv: kv, ranks: ranks, procs: procs, self: self}, nil
}

// FabricStats returns the RDMA device's counters when the job runs over
// it (see [JoinFabricJob]).
func (j *Job) FabricStats() (FabricStats, bool) {
	if d, ok := j.dev.(*rdmaDevice); ok {
		return d.Stats(), true
	}
	return FabricStats{}, false
}

// FabricInfo describes the provider a job over the RDMA backend uses:
// its name, domain and memory registration mode.
func (j *Job) FabricInfo() (string, bool) {
	if d, ok := j.dev.(*rdmaDevice); ok {
		i := d.info
		return fmt.Sprintf("provider %s, fabric %s, domain %s, mr_mode %s, thread safe %v, write ordered %v, eager limit %d, large eager sends uncopied %v",
			i.Provider, i.Fabric, i.Domain, i.MRMode, i.ThreadSafe, i.WriteOrdered, d.eager, d.lend), true
	}
	return "", false
}
