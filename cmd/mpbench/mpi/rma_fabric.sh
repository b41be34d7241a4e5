#!/usr/bin/env bash
# rma_fabric.sh: one-sided latency and bandwidth (osu_put_latency,
# osu_get_latency, osu_acc_latency, osu_fop_latency, osu_cas_latency,
# osu_put_bw) between two processes of one host over the RDMA backend,
# windows on the fabric's one-sided operations against the same windows on
# active messages
# (MPGO_WINDOW_PATH=am), per provider, beside MPICH's shared-memory path,
# alternated run by run under the same mpiexec. Prints the median of each
# figure over the runs and the ratios am/fabric and fabric/MPICH.
#
# Usage: cmd/mpbench/mpi/rma_fabric.sh [RUNS] [OUTDIR] [PROVIDERS]   (from the module root)
#
# 2026-11-25, 2 cores shared with other jobs, 5 runs, medians in us (8 B):
#              put    get    fop    cas   | put_bw MB/s 1 KiB  64 KiB  1 MiB
#   MPICH      0.26   0.96   0.48   1.3   |             8901   12480   7042
#   tcp fabric 26.6   35.0   36.6   36.0  |              117    4029   2629
#   tcp am     165    266    21.5   57.2  |               40     110    558
#   shm fabric 112    3.6    (am)   (am)  |              7.9    2347   4470
#   shm am     226    187    5.4    183   |              115     285    653
# The handlers' path is bimodal (18 us to 350 us per run over tcp, as both
# ends fall in or out of their polling windows); the fabric path is not
# (25-45 us). Over shm the accumulates stay on the handlers, and a Put
# waits for shm's delivery completion (about 100 us). osu_acc_latency
# (uint8 Sum), tcp, 3 runs: 8 B fabric 39 us, am 174, MPICH 0.4; 64 KiB
# fabric 704, am 651, MPICH 129.
set -euo pipefail
runs=${1:-3}
provs=${3:-"tcp shm"}
tags=rdma
. "$(dirname "$0")/build.sh"
lat="8:2000:100 1024:2000:100 65536:500:20"
one="8:2000:100"
bw="8:100:10 1024:100:10 65536:20:2 1048576:10:2"
for r in $(seq "$runs"); do
	echo "run $r/$runs" >&2
	for b in put_latency get_latency acc_latency fop_latency cas_latency put_bw; do
		plans=$lat
		case $b in put_bw) plans=$bw ;; fop_latency | cas_latency) plans=$one ;; esac
		run mpich 2 $b "$out/mpbench_mpi" $b 1 64 $plans
		for p in $provs; do
			MPGO_SHM=0 MPGO_BACKEND=rdma FI_PROVIDER=$p run "fabric-$p" 2 $b "$out/mpbench" $b 1 64 $plans
			MPGO_SHM=0 MPGO_BACKEND=rdma FI_PROVIDER=$p MPGO_WINDOW_PATH=am run "am-$p" 2 $b "$out/mpbench" $b 1 64 $plans
		done
	done
done
python3 - "$out" "$provs" <<'PY'
import sys, glob, statistics, collections
out, provs = sys.argv[1], sys.argv[2].split()
vals = collections.defaultdict(list)  # (bench, size, impl) -> per-run figures
for f in glob.glob(out + "/*.txt"):
    name, bench = f.split("/")[-1].rsplit(".", 2)[:2]
    for line in open(f):
        p = line.split()
        if p and p[0] == "R":
            vals[bench, int(p[3]), name].append(float(p[7] if bench == "put_bw" else p[4]))
med = lambda k: statistics.median(vals[k]) if vals.get(k) else float("nan")
for bench in ("put_latency", "get_latency", "acc_latency", "fop_latency", "cas_latency", "put_bw"):
    unit = "MB/s, higher is better" if bench == "put_bw" else "us, lower is better"
    print(f"== {bench} ({unit}): medians over runs (n); am/fabric and fabric/MPICH ratios of the medians")
    for size in sorted({k[1] for k in vals if k[0] == bench}):
        m = med((bench, size, "mpich"))
        cols = [f"mpich={m:.4g}"]
        for p in provs:
            f, a = med((bench, size, "fabric-" + p)), med((bench, size, "am-" + p))
            n = len(vals.get((bench, size, "fabric-" + p), []))
            cols.append(f"{p}: fabric={f:.4g} am={a:.4g} (n={n}) am/fabric={a / f:.2f} fabric/mpich={f / m:.1f}")
        print(f"{size:>8} " + "  ".join(cols))
PY
echo "raw lines in $out" >&2
