#!/usr/bin/env bash
# vs_mpich.sh: mpgo between processes of one host (the shared-memory
# backend, and TCP loopback with MPGO_SHM=0) against MPICH's shared-memory
# path, under the same mpiexec, alternated run by run, the same kernels on
# both sides (mpbench under a launcher speaks mpbench_mpi's command line).
# Prints the median of each figure over the runs and mpgo/MPICH ratios.
#
# Usage: cmd/mpbench/mpi/vs_mpich.sh [RUNS] [OUTDIR]    (from the module root)
set -euo pipefail
runs=${1:-5}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
go build -o "$out/mpbench" ./cmd/mpbench
mpicc -O2 -w -o "$out/mpbench_mpi" cmd/mpbench/mpi/mpbench.c
lat="1:10000:100 4:10000:100 16:10000:100 64:10000:100 256:10000:100 1024:10000:100 4096:10000:100
 16384:1000:10 65536:1000:10 262144:1000:10 1048576:100:10 4194304:100:10 16777216:50:5"
bw="1:100:10 64:100:10 1024:100:10 16384:100:10 65536:20:2 1048576:20:2 4194304:10:2 16777216:5:1"
ar="8:200:20"
run() { # name np bench plans... ; env before
	local name=$1 np=$2 bench=$3; shift 3
	nice -n -19 timeout 600 mpiexec -n "$np" "$@" >>"$out/$name.$bench.txt" || echo "$name $bench failed" >&2
}
for r in $(seq "$runs"); do
	echo "run $r/$runs" >&2
	for b in latency bw; do
		plans=$lat; [ $b = bw ] && plans=$bw
		run mpich 2 $b "$out/mpbench_mpi" $b 1 64 $plans
		run shm 2 $b "$out/mpbench" $b 1 64 $plans
		[ "$r" -le 3 ] && MPGO_SHM=0 run tcp 2 $b "$out/mpbench" $b 1 64 $plans
	done
	run mpich 8 allreduce "$out/mpbench_mpi" allreduce 1 64 $ar
	run shm 8 allreduce "$out/mpbench" allreduce 1 64 $ar
done
python3 - "$out" <<'PY'
import sys, glob, statistics, collections
out = sys.argv[1]
med = collections.defaultdict(dict)
for f in glob.glob(out + "/*.txt"):
    name, bench = f.split("/")[-1].split(".")[:2]
    vals = collections.defaultdict(list)
    for line in open(f):
        p = line.split()
        if p and p[0] == "R":
            size = int(p[3]); v = float(p[7] if bench == "bw" else p[4])
            vals[size].append(v)
    for size, v in vals.items():
        med[bench, size][name] = (statistics.median(v), len(v))
for bench in ("latency", "bw", "allreduce"):
    unit = "MB/s" if bench == "bw" else "us"
    print(f"== {bench} ({unit}, medians; ratio = mpgo shm / MPICH{', higher is better' if bench == 'bw' else ', lower is better'})")
    for (b, size) in sorted(k for k in med if k[0] == bench):
        row = med[b, size]
        cols = " ".join(f"{n}={row[n][0]:.4g}(n={row[n][1]})" for n in ("mpich", "shm", "tcp") if n in row)
        ratio = row["shm"][0] / row["mpich"][0] if "shm" in row and "mpich" in row else float("nan")
        print(f"{size:>9} {cols}  ratio={ratio:.2f}")
PY
echo "raw lines in $out" >&2
