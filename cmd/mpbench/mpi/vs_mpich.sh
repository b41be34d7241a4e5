#!/usr/bin/env bash
# vs_mpich.sh: mpgo between processes of one host (the shared-memory
# backend, and TCP loopback with MPGO_SHM=0) against MPICH's shared-memory
# path, under the same mpiexec, alternated run by run, the same kernels on
# both sides (mpbench under a launcher speaks mpbench_mpi's command line).
# Prints the median of each figure over the runs and mpgo/MPICH ratios;
# for TCP, against MPICH over TCP too (its UCX transport limited to tcp:
# UCX_TLS=tcp,self), in the runs where mpgo's TCP runs.
# The sizes are powers of 4, and 32 KiB and 48 KiB beside them: the two
# sides of backend/shm's protocol switch (40 KiB) and of its split reads
# (from 48 KiB).
#
# Usage: cmd/mpbench/mpi/vs_mpich.sh [RUNS] [OUTDIR]    (from the module root)
set -euo pipefail
runs=${1:-5}
. "$(dirname "$0")/build.sh"
lat="1:10000:100 4:10000:100 16:10000:100 64:10000:100 256:10000:100 1024:10000:100 4096:10000:100
 16384:1000:10 32768:1000:10 49152:1000:10 65536:1000:10 262144:1000:10 1048576:100:10 4194304:100:10 16777216:50:5"
bw="1:100:10 64:100:10 1024:100:10 16384:100:10 32768:100:10 65536:20:2 1048576:20:2 4194304:10:2 16777216:5:1"
ar="8:200:20"
for r in $(seq "$runs"); do
	echo "run $r/$runs" >&2
	for b in latency bw; do
		plans=$lat; [ $b = bw ] && plans=$bw
		run mpich 2 $b "$out/mpbench_mpi" $b 1 64 $plans
		run shm 2 $b "$out/mpbench" $b 1 64 $plans
		if [ "$r" -le 3 ]; then
			MPGO_SHM=0 run tcp 2 $b "$out/mpbench" $b 1 64 $plans
			UCX_TLS=tcp,self run mpichtcp 2 $b "$out/mpbench_mpi" $b 1 64 $plans
		fi
	done
	run mpich 8 allreduce "$out/mpbench_mpi" allreduce 1 64 $ar
	run shm 8 allreduce "$out/mpbench" allreduce 1 64 $ar
done
python3 - "$out" "$(dirname "$0")" <<'PY'
# Runs are alternated (MPICH, then mpgo, in each round), so the ratio of a
# round is measured over the same minutes: the paired ratio's median is
# steadier on a busy machine than the ratio of the two medians.
import sys, statistics
sys.path.insert(0, sys.argv[2])
from rounds import read
out = sys.argv[1]
vals = read(out, lambda bench: 7 if bench == "bw" else 4)  # (bench, size, impl) -> per-run figures
for bench in ("latency", "bw", "allreduce"):
    unit = "MB/s" if bench == "bw" else "us"
    better = "higher" if bench == "bw" else "lower"
    print(f"== {bench} ({unit}): medians over rounds; ratio mpgo shm / MPICH and tcp ratio mpgo TCP / MPICH over TCP ({better} is better): of the medians, and median of the rounds' ratios")
    for size in sorted({k[1] for k in vals if k[0] == bench}):
        row = {n: vals[bench, size, n] for n in ("mpich", "shm", "mpichtcp", "tcp") if (bench, size, n) in vals}
        cols = " ".join(f"{n}={statistics.median(v):.4g}(n={len(v)})" for n, v in row.items())
        for ours, theirs, label in (("shm", "mpich", ""), ("tcp", "mpichtcp", "tcp ")):
            if ours in row and theirs in row:
                r1 = statistics.median(row[ours]) / statistics.median(row[theirs])
                r2 = statistics.median(a / b for a, b in zip(row[ours], row[theirs]))
                cols += f"  {label}ratio={r1:.2f} paired={r2:.2f}"
        print(f"{size:>9} {cols}")
PY
echo "raw lines in $out" >&2
