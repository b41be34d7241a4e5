package comm

import "github.com/mpgo/mpgo/comm/internal/pmi"

// JoinKV joins the job whose key-value space is kv, as JoinJob does with
// the launcher's (tests play each process with goroutines and share an
// in-memory space: pmi.NewMemory).
func JoinKV(kv pmi.Job, cfg JobConfig) (*Job, error) {
	return joinKV(kv, cfg, func(string) string { return "" })
}
