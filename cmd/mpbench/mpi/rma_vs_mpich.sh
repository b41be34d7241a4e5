#!/usr/bin/env bash
# rma_vs_mpich.sh: mpgo's one-sided benchmarks between 2 processes of one
# host under mpiexec, with shared windows (MPBENCH_WIN=shared: one segment
# both processes map, operations straight to memory) and library-allocated
# ones (MPBENCH_WIN=allocate: operations on the target's active-message
# handlers over the shared-memory backend), against MPICH's
# MPI_Win_allocate (which MPICH also backs with shared memory within a
# node), alternated run by run, the same kernels on each side. Prints the
# median latency of each benchmark and size over the runs, and the ratios
# shared/MPICH and shared/allocate (lower is better).
#
# Usage: cmd/mpbench/mpi/rma_vs_mpich.sh [RUNS] [OUTDIR]    (from the module root)
set -euo pipefail
runs=${1:-3}
. "$(dirname "$0")/build.sh"
sized="1:10000:100 8:10000:100 1024:10000:100 65536:1000:10"
for r in $(seq "$runs"); do
	echo "run $r/$runs" >&2
	for b in put_latency get_latency acc_latency fop_latency cas_latency; do
		plans=$sized; case $b in fop*|cas*) plans="8:10000:100" ;; esac
		run mpich 2 $b "$out/mpbench_mpi" $b 1 64 $plans
		MPBENCH_WIN=shared run shared 2 $b "$out/mpbench" $b 1 64 $plans
		MPBENCH_WIN=allocate run allocate 2 $b "$out/mpbench" $b 1 64 $plans
	done
done
python3 - "$out" "$(dirname "$0")" <<'PY'
import sys, statistics
sys.path.insert(0, sys.argv[2])
from rounds import read
out = sys.argv[1]
vals = read(out, lambda bench: 4)  # (bench, size, impl) -> per-run figures
print("latency (us): median over runs; ratios of the medians (lower is better)")
for bench in ("put_latency", "get_latency", "acc_latency", "fop_latency", "cas_latency"):
    for size in sorted({k[1] for k in vals if k[0] == bench}):
        row = {n: statistics.median(vals[bench, size, n]) for n in ("shared", "allocate", "mpich") if (bench, size, n) in vals}
        cols = " ".join(f"{n}={v:.4g}(n={len(vals[bench, size, n])})" for n, v in row.items())
        if len(row) == 3:
            cols += f"  shared/mpich={row['shared'] / row['mpich']:.3f} shared/allocate={row['shared'] / row['allocate']:.4f}"
        print(f"{bench:12} {size:>6} {cols}")
PY
echo "raw lines in $out" >&2
