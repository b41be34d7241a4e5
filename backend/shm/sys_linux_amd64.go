package shm

// Linux system call numbers on amd64 that package syscall does not name.
const (
	sysMemfdCreate     = 319
	sysProcessVMWritev = 311
	sysProcessVMReadv  = 310
)
