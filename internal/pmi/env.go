package pmi

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

// Launcher names the launcher an environment describes.
type Launcher int

const (
	None    Launcher = iota // started plainly
	PMI                     // PMI-1 on PMI_FD or PMI_PORT: Hydra, Slurm --mpi=pmi2
	Slurm                   // srun without a PMI socket (wrong --mpi)
	OpenMPI                 // mpirun of Open MPI
)

func (l Launcher) String() string {
	switch l {
	case PMI:
		return "PMI"
	case Slurm:
		return "Slurm"
	case OpenMPI:
		return "Open MPI"
	}
	return "none"
}

// Detect reports which launcher, if any, started the process whose
// environment getenv reads. A Slurm step of a single task without a PMI
// socket (a batch script's shell) counts as started plainly.
func Detect(getenv func(string) string) Launcher {
	switch {
	case getenv("PMI_FD") != "" || getenv("PMI_PORT") != "":
		return PMI
	case getenv("OMPI_COMM_WORLD_RANK") != "":
		return OpenMPI
	case getenv("SLURM_PROCID") != "":
		for _, k := range []string{"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"} {
			if n, err := strconv.Atoi(getenv(k)); err == nil {
				if n > 1 {
					return Slurm
				}
				return None
			}
		}
		return None
	}
	return None
}

// FromEnv joins the job the environment (read through getenv; nil means
// os.Getenv) describes. It fails with ErrNoLauncher when no launcher
// started the process, or when one did but left out what mpgo needs: a
// Slurm step without a PMI socket (use srun --mpi=pmi2), an Open MPI job
// on several hosts without MPGO_ROOT, or without MPGO_SECRET (unless
// MPGO_INSECURE=1). An Open MPI job on one host needs neither
// (local_linux.go).
func FromEnv(getenv func(string) string) (Job, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch Detect(getenv) {
	case PMI:
		return fromPMIEnv(getenv)
	case OpenMPI:
		return rootFromEnv(getenv)
	case Slurm:
		return nil, fmt.Errorf("pmi: started by srun without a PMI socket: run with srun --mpi=pmi2: %w", ErrNoLauncher)
	}
	return nil, fmt.Errorf("pmi: no PMI_FD, PMI_PORT, SLURM_PROCID or OMPI_COMM_WORLD_RANK in the environment: %w", ErrNoLauncher)
}

func envInt(getenv func(string) string, key string, def int) (int, error) {
	s := getenv(key)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("pmi: %s=%q is not a number: %w", key, s, ErrNoLauncher)
	}
	return n, nil
}

// localLayout reads the node-local layout: Hydra's MPI_LOCALRANKID and
// MPI_LOCALNRANKS, or Slurm's SLURM_LOCALID with a single-node step.
func localLayout(getenv func(string) string, size int) (rank, n int) {
	if r, err := strconv.Atoi(getenv("MPI_LOCALRANKID")); err == nil {
		if n, err := strconv.Atoi(getenv("MPI_LOCALNRANKS")); err == nil {
			return r, n
		}
	}
	if r, err := strconv.Atoi(getenv("SLURM_LOCALID")); err == nil {
		for _, k := range []string{"SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_NNODES"} {
			if getenv(k) == "1" {
				return r, size
			}
		}
		return r, 0
	}
	return 0, 0
}

func fromPMIEnv(getenv func(string) string) (Job, error) {
	rank, err := envInt(getenv, "PMI_RANK", -1)
	if err != nil {
		return nil, err
	}
	size, err := envInt(getenv, "PMI_SIZE", -1)
	if err != nil {
		return nil, err
	}
	cfg := ClientConfig{Rank: rank, Size: size}
	cfg.LocalRank, cfg.LocalSize = localLayout(getenv, size)
	var conn net.Conn
	if s := getenv("PMI_FD"); s != "" {
		fd, err := strconv.Atoi(s)
		if err != nil || fd < 0 {
			return nil, fmt.Errorf("pmi: PMI_FD=%q is not a file descriptor: %w", s, ErrNoLauncher)
		}
		f := os.NewFile(uintptr(fd), "PMI_FD")
		if f == nil {
			return nil, fmt.Errorf("pmi: PMI_FD=%d is not open: %w", fd, ErrNoLauncher)
		}
		conn, err = net.FileConn(f) // a duplicate: the inherited descriptor is closed below
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("pmi: PMI_FD=%d is not a socket: %w: %w", fd, ErrNoLauncher, err)
		}
	} else {
		addr := getenv("PMI_PORT")
		cfg.ID = getenv("PMI_ID")
		if cfg.ID == "" {
			cfg.ID = strconv.Itoa(max(rank, 0))
		}
		conn, err = net.DialTimeout("tcp", addr, 30*time.Second)
		if err != nil {
			return nil, fmt.Errorf("pmi: PMI_PORT=%q: %w: %w", addr, ErrNoLauncher, err)
		}
	}
	return NewClient(conn, cfg)
}
