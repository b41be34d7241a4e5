"""rounds: the figures of the runs vs_mpich.sh and rma_vs_mpich.sh made.

Each run appended mpbench's (or mpbench_mpi's) "R" lines to OUT/IMPL.BENCH.txt:
"R <rep> <index> <size> <lat> <min> <max> <bw> <rate>".
"""
import collections
import glob


def read(out, column):
    """Returns {(bench, size, impl): [figure of each run]}, the figure in
    the column column(bench) names of the R lines (4: latency, 7: bandwidth)."""
    vals = collections.defaultdict(list)
    for f in glob.glob(out + "/*.txt"):
        name, bench = f.split("/")[-1].split(".")[:2]
        for line in open(f):
            p = line.split()
            if p and p[0] == "R":
                vals[bench, int(p[3]), name].append(float(p[column(bench)]))
    return vals
