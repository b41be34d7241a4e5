package comm

import "github.com/mpgo/mpgo/comm/internal/engine"

// ShareLimit is the smallest message whose copy into a receive goroutine
// ranks share between two goroutines (comm/internal/engine/copyin.go).
const ShareLimit = engine.ShareLimit
