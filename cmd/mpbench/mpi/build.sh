# build.sh, sourced by the comparison scripts (vs_mpich.sh, rma_vs_mpich.sh,
# rma_fabric.sh) from the module root with their arguments: builds mpbench
# (with the build tags in $tags, when the script set it) and the C side,
# mpbench_mpi, into the directory $2 (default: a new temporary one), $out,
# and defines run.
out=${2:-$(mktemp -d)}
mkdir -p "$out"
go build ${tags:+-tags "$tags"} -o "$out/mpbench" ./cmd/mpbench
mpicc -O2 -w -o "$out/mpbench_mpi" cmd/mpbench/mpi/mpbench.c

# run NAME NP BENCH PROGRAM ARGS...: one run of PROGRAM on NP processes
# under mpiexec (environment given before run reaches it), its lines
# appended to $out/NAME.BENCH.txt.
run() {
	local name=$1 np=$2 bench=$3
	shift 3
	nice -n -19 timeout 600 mpiexec -n "$np" "$@" >>"$out/$name.$bench.txt" || echo "$name $bench failed" >&2
}
