# build.sh, sourced by the comparison scripts (vs_mpich.sh, rma_vs_mpich.sh)
# from the module root with their arguments: builds mpbench and the C side,
# mpbench_mpi, into the directory $2 (default: a new temporary one), $out.
out=${2:-$(mktemp -d)}
mkdir -p "$out"
go build -o "$out/mpbench" ./cmd/mpbench
mpicc -O2 -w -o "$out/mpbench_mpi" cmd/mpbench/mpi/mpbench.c
