//go:build rdma

package comm

import "github.com/mpgo/mpgo/comm/internal/pmi"

// JoinFabricKV joins the job whose key-value space is kv over the RDMA
// backend, as JoinFabricJob does with the launcher's (tests play each
// process with goroutines: pmi.NewMemory).
func JoinFabricKV(kv pmi.Job, cfg FabricConfig) (*Job, error) {
	if cfg.RanksPerProcess == 0 {
		cfg.RanksPerProcess = 1
	}
	return joinFabricKV(kv, cfg)
}
