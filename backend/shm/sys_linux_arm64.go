package shm

// Linux system call numbers on arm64 that package syscall does not name.
const (
	sysMemfdCreate     = 279
	sysProcessVMWritev = 271
	sysProcessVMReadv  = 270
)
