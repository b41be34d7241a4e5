package pmi

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
)

// HostID identifies this host, for finding which processes of a job
// share it (and can share memory): a digest of its name and its boot id
// (/proc/sys/kernel/random/boot_id, where the system has one), so that
// two machines of the same name, or one machine before and after a
// reboot, differ. It is a word a key-value store carries as it is.
func HostID() string {
	name, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	sum := sha256.Sum256([]byte(name + "\x00" + strings.TrimSpace(string(boot))))
	return hex.EncodeToString(sum[:16])
}
