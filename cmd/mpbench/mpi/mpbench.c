/*
 * mpbench.c: the MPI side of `mpbench --vs-mpi`.
 *
 * mpbench builds this file with mpicc and runs it with mpiexec, so that an
 * MPI library is measured with exactly the definitions mpbench times mpgo
 * with (the OSU Micro-Benchmarks 7.x and IMB-MPI1 loops; see the Go files
 * osu_p2p.go, osu_coll.go and imb.go, which this mirrors line for line).
 * It decides nothing itself: the Go side passes every size with its
 * iteration and warm-up counts.
 *
 * Usage: mpbench_mpi BENCH REPS WINDOW SIZE:ITERS:SKIP...
 *
 * Rank 0 prints one line naming the library,
 *     V <first line of MPI_Get_library_version>
 * then, for each repetition and size, in that order,
 *     R <rep> <index> <size> <lat> <min> <max> <bw> <rate>
 * with the five figures of mpbench's sample (µs, µs, µs, MB/s of 10^6
 * bytes, messages/s; 0 where the benchmark has no such figure).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LAT, MIN, MAX, BW, RATE, NFIG };

enum {
    TAG_DATA = 1,
    TAG_LEFT = 2,
    TAG_RIGHT = 3,
    TAG_BACK = 10,
    TAG_BW = 100,
    TAG_ACK = 101,
};

enum { IMB_BARRIERS = 2 };

struct plan {
    long size;
    int iters, skip;
};

static int rank, nranks, window;
static char *sbuf, *rbuf;
static float *fsend, *frecv;
static MPI_Request *reqs;

static void fail(const char *msg)
{
    fprintf(stderr, "mpbench_mpi: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void *alloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        fail("out of memory");
    memset(p, 'a', n);
    return p;
}

/* over_ranks reduces v to rank 0: its minimum, mean and maximum (and sum). */
static void over_ranks(double v, double *lo, double *avg, double *hi, double *sum)
{
    double s = 0;
    MPI_Reduce(&v, lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&v, hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    *avg = s / nranks;
    if (sum)
        *sum = s;
}

/* ---- OSU point-to-point ---- */

static void latency(const struct plan *p, double *f)
{
    double t0 = 0;
    int i;
    if (rank == 0) {
        for (i = 0; i < p->iters + p->skip; i++) {
            if (i == p->skip)
                t0 = MPI_Wtime();
            MPI_Send(sbuf, p->size, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf, p->size, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        f[LAT] = (MPI_Wtime() - t0) * 1e6 / (2.0 * p->iters);
    } else if (rank == 1) {
        for (i = 0; i < p->iters + p->skip; i++) {
            MPI_Recv(rbuf, p->size, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, p->size, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD);
        }
    }
}

/* bw_sender and bw_receiver are osu_bw's two sides; with sync, a barrier
 * at the first timed iteration (osu_mbw_mr). */
static double bw_sender(const struct plan *p, int peer, int sync)
{
    double t0 = 0;
    int i, j;
    for (i = 0; i < p->iters + p->skip; i++) {
        if (i == p->skip) {
            if (sync)
                MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        for (j = 0; j < window; j++)
            MPI_Isend(sbuf, p->size, MPI_CHAR, peer, TAG_BW, MPI_COMM_WORLD, &reqs[j]);
        MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
        MPI_Recv(rbuf, 4, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return MPI_Wtime() - t0;
}

static void bw_receiver(const struct plan *p, int peer, int sync)
{
    int i, j;
    for (i = 0; i < p->iters + p->skip; i++) {
        if (i == p->skip && sync)
            MPI_Barrier(MPI_COMM_WORLD);
        for (j = 0; j < window; j++)
            MPI_Irecv(rbuf, p->size, MPI_CHAR, peer, TAG_BW, MPI_COMM_WORLD, &reqs[j]);
        MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
        MPI_Send(sbuf, 4, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD);
    }
}

static void bw(const struct plan *p, double *f)
{
    if (rank == 0) {
        double t = bw_sender(p, 1, 0);
        f[BW] = p->size / 1e6 * p->iters * window / t;
    } else if (rank == 1) {
        bw_receiver(p, 0, 0);
    }
}

static void bibw(const struct plan *p, double *f)
{
    MPI_Request *recvs = reqs, *sends = reqs + window;
    int peer = 1 - rank, rtag = rank == 0 ? TAG_BACK : TAG_BW, stag = rank == 0 ? TAG_BW : TAG_BACK;
    double t0 = 0;
    int i, j;
    if (rank > 1)
        return;
    for (i = 0; i < p->iters + p->skip; i++) {
        if (i == p->skip)
            t0 = MPI_Wtime();
        for (j = 0; j < window; j++)
            MPI_Irecv(rbuf, p->size, MPI_CHAR, peer, rtag, MPI_COMM_WORLD, &recvs[j]);
        for (j = 0; j < window; j++)
            MPI_Isend(sbuf, p->size, MPI_CHAR, peer, stag, MPI_COMM_WORLD, &sends[j]);
        MPI_Waitall(window, sends, MPI_STATUSES_IGNORE);
        MPI_Waitall(window, recvs, MPI_STATUSES_IGNORE);
    }
    if (rank == 0)
        f[BW] = p->size / 1e6 * p->iters * window * 2 / (MPI_Wtime() - t0);
}

static void mbw_mr(const struct plan *p, double *f)
{
    int npairs = nranks / 2;
    double t = 0, lo, avg, hi, sum, bw;
    if (rank < npairs)
        t = bw_sender(p, rank + npairs, 1);
    else if (rank < 2 * npairs)
        bw_receiver(p, rank - npairs, 1);
    else
        MPI_Barrier(MPI_COMM_WORLD);
    over_ranks(t, &lo, &avg, &hi, &sum);
    if (rank == 0) {
        bw = p->size / 1e6 * npairs * p->iters * window / (sum / npairs);
        f[BW] = bw;
        f[RATE] = p->size > 0 ? bw * 1e6 / p->size : 0;
    }
}

static void multi_lat(const struct plan *p, double *f)
{
    int npairs = nranks / 2, first = rank < npairs, peer = first ? rank + npairs : rank - npairs, i;
    double t0 = 0, lat = 0, lo, avg, hi, sum;
    if (rank < 2 * npairs) {
        for (i = 0; i < p->iters + p->skip; i++) {
            if (i == p->skip)
                t0 = MPI_Wtime();
            if (first)
                MPI_Send(sbuf, p->size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf, p->size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (!first)
                MPI_Send(sbuf, p->size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD);
        }
        lat = (MPI_Wtime() - t0) * 1e6 / (2.0 * p->iters);
    }
    over_ranks(lat, &lo, &avg, &hi, &sum);
    if (rank == 0)
        f[LAT] = sum / (2 * npairs);
}

/* ---- OSU collectives: each call timed, a barrier between calls ---- */

enum coll { BCAST, BCAST_PERSISTENT, REDUCE, REDUCE_PERSISTENT, ALLREDUCE, ALLREDUCE_PERSISTENT, ALLGATHER, ALLGATHER_PERSISTENT, ALLTOALL, ALLTOALL_PERSISTENT, BARRIER, BARRIER_PERSISTENT };

static void collective(enum coll op, const struct plan *p, double *f)
{
    double timer = 0, t0;
    int i, n = (int)(p->size / 4);
    MPI_Request req = MPI_REQUEST_NULL;
    if (op == ALLREDUCE_PERSISTENT) /* osu_allreduce_persistent: planned once per size */
        MPI_Allreduce_init(fsend, frecv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else if (op == BARRIER_PERSISTENT)
        MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else if (op == BCAST_PERSISTENT)
        MPI_Bcast_init(sbuf, p->size, MPI_CHAR, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else if (op == REDUCE_PERSISTENT)
        MPI_Reduce_init(fsend, frecv, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else if (op == ALLGATHER_PERSISTENT)
        MPI_Allgather_init(sbuf, p->size, MPI_CHAR, rbuf, p->size, MPI_CHAR, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else if (op == ALLTOALL_PERSISTENT)
        MPI_Alltoall_init(sbuf, p->size, MPI_CHAR, rbuf, p->size, MPI_CHAR, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    for (i = 0; i < p->iters + p->skip; i++) {
        t0 = MPI_Wtime();
        switch (op) {
        case BCAST:
            MPI_Bcast(sbuf, p->size, MPI_CHAR, 0, MPI_COMM_WORLD);
            break;
        case REDUCE:
            MPI_Reduce(fsend, frecv, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
            break;
        case ALLREDUCE:
            MPI_Allreduce(fsend, frecv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            break;
        case ALLREDUCE_PERSISTENT:
        case BARRIER_PERSISTENT:
        case BCAST_PERSISTENT:
        case REDUCE_PERSISTENT:
        case ALLGATHER_PERSISTENT:
        case ALLTOALL_PERSISTENT:
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            break;
        case ALLGATHER:
            MPI_Allgather(sbuf, p->size, MPI_CHAR, rbuf, p->size, MPI_CHAR, MPI_COMM_WORLD);
            break;
        case ALLTOALL:
            MPI_Alltoall(sbuf, p->size, MPI_CHAR, rbuf, p->size, MPI_CHAR, MPI_COMM_WORLD);
            break;
        case BARRIER:
            MPI_Barrier(MPI_COMM_WORLD);
            break;
        }
        if (i >= p->skip)
            timer += MPI_Wtime() - t0;
        if (op != BARRIER && op != BARRIER_PERSISTENT)
            MPI_Barrier(MPI_COMM_WORLD);
    }
    if (req != MPI_REQUEST_NULL)
        MPI_Request_free(&req);
    over_ranks(timer * 1e6 / p->iters, &f[MIN], &f[LAT], &f[MAX], NULL);
}

/* ---- IMB-MPI1 ---- */

enum imb { PINGPONG, PINGPING, SENDRECV, EXCHANGE };

static void imb_op(enum imb op, const struct plan *p)
{
    int right = (rank + 1) % nranks, left = (rank - 1 + nranks) % nranks, peer = 1 - rank;
    switch (op) {
    case PINGPONG:
        if (rank == 0) {
            MPI_Send(sbuf, p->size, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf, p->size, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, p->size, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, p->size, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD);
        }
        break;
    case PINGPING:
        MPI_Isend(sbuf, p->size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[0]);
        MPI_Recv(rbuf, p->size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
        break;
    case SENDRECV:
        MPI_Sendrecv(sbuf, p->size, MPI_CHAR, right, TAG_DATA, rbuf, p->size, MPI_CHAR, left, TAG_DATA,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
    case EXCHANGE:
        MPI_Isend(sbuf, p->size, MPI_CHAR, right, TAG_RIGHT, MPI_COMM_WORLD, &reqs[0]);
        MPI_Isend(sbuf, p->size, MPI_CHAR, left, TAG_LEFT, MPI_COMM_WORLD, &reqs[1]);
        MPI_Recv(rbuf, p->size, MPI_CHAR, left, TAG_RIGHT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(rbuf + p->size, p->size, MPI_CHAR, right, TAG_LEFT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        break;
    }
}

static void imb(enum imb op, const struct plan *p, double *f)
{
    double t0, t, lo, avg, hi;
    int i;
    if ((op == PINGPONG || op == PINGPING) && rank > 1)
        return;
    for (i = 0; i < p->skip; i++)
        imb_op(op, p);
    for (i = 0; i < IMB_BARRIERS; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (i = 0; i < p->iters; i++)
        imb_op(op, p);
    t = (MPI_Wtime() - t0) * 1e6 / p->iters;
    switch (op) {
    case PINGPONG:
        if (rank == 0) {
            f[LAT] = t / 2;
            f[BW] = p->size / f[LAT];
        }
        break;
    case PINGPING:
        over_ranks(t, &lo, &avg, &hi, NULL);
        f[LAT] = hi;
        f[BW] = p->size / hi;
        break;
    case SENDRECV:
    case EXCHANGE:
        over_ranks(t, &lo, &avg, &hi, NULL);
        f[LAT] = avg;
        f[MIN] = lo;
        f[MAX] = hi;
        f[BW] = (op == SENDRECV ? 2.0 : 4.0) * p->size / hi;
        break;
    }
}

/* The one-sided benchmarks (osu_rma.go): a window allocated per size
 * (osu -w allocate), rank 0 locks rank 1 shared and flushes after every
 * operation (osu -s flush); rank 1 waits in the barrier. */
enum rma { PUT, GET, ACC, FOP, CAS };

static void rma_latency(enum rma op, const struct plan *p, double *f)
{
    MPI_Win win;
    void *base;
    long n = (op == FOP || op == CAS) ? (long)sizeof(long long) : p->size;
    long long one = 1, cmp = 0, next, old;
    double t0 = 0;
    int i;
    MPI_Win_allocate(n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        for (i = 0; i < p->iters + p->skip; i++) {
            if (i == p->skip)
                t0 = MPI_Wtime();
            switch (op) {
            case PUT:
                MPI_Put(sbuf, p->size, MPI_CHAR, 1, 0, p->size, MPI_CHAR, win);
                break;
            case GET:
                MPI_Get(rbuf, p->size, MPI_CHAR, 1, 0, p->size, MPI_CHAR, win);
                break;
            case ACC:
                MPI_Accumulate(sbuf, p->size, MPI_UNSIGNED_CHAR, 1, 0, p->size, MPI_UNSIGNED_CHAR, MPI_SUM, win);
                break;
            case FOP:
                MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, 1, 0, MPI_SUM, win);
                break;
            case CAS:
                next = cmp + 1;
                MPI_Compare_and_swap(&next, &cmp, &old, MPI_LONG_LONG, 1, 0, win);
                break;
            }
            MPI_Win_flush(1, win);
            if (op == CAS)
                cmp = old + 1;
        }
        f[LAT] = (MPI_Wtime() - t0) * 1e6 / p->iters;
        MPI_Win_unlock(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
}

static void put_bw(const struct plan *p, double *f)
{
    MPI_Win win;
    void *base;
    char *src = alloc(p->size * window);
    double t0 = 0;
    int i, j;
    MPI_Win_allocate(p->size * window, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        for (i = 0; i < p->iters + p->skip; i++) {
            if (i == p->skip)
                t0 = MPI_Wtime();
            for (j = 0; j < window; j++)
                MPI_Put(src + j * p->size, p->size, MPI_CHAR, 1, j * p->size, p->size, MPI_CHAR, win);
            MPI_Win_flush(1, win);
        }
        f[BW] = p->size / 1e6 * p->iters * window / (MPI_Wtime() - t0);
        MPI_Win_unlock(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    free(src);
}

static void run(const char *bench, const struct plan *p, double *f)
{
    if (!strcmp(bench, "latency"))
        latency(p, f);
    else if (!strcmp(bench, "bw"))
        bw(p, f);
    else if (!strcmp(bench, "bibw"))
        bibw(p, f);
    else if (!strcmp(bench, "mbw_mr"))
        mbw_mr(p, f);
    else if (!strcmp(bench, "multi_lat"))
        multi_lat(p, f);
    else if (!strcmp(bench, "bcast"))
        collective(BCAST, p, f);
    else if (!strcmp(bench, "bcast_persistent"))
        collective(BCAST_PERSISTENT, p, f);
    else if (!strcmp(bench, "reduce"))
        collective(REDUCE, p, f);
    else if (!strcmp(bench, "reduce_persistent"))
        collective(REDUCE_PERSISTENT, p, f);
    else if (!strcmp(bench, "allreduce"))
        collective(ALLREDUCE, p, f);
    else if (!strcmp(bench, "allreduce_persistent"))
        collective(ALLREDUCE_PERSISTENT, p, f);
    else if (!strcmp(bench, "allgather"))
        collective(ALLGATHER, p, f);
    else if (!strcmp(bench, "allgather_persistent"))
        collective(ALLGATHER_PERSISTENT, p, f);
    else if (!strcmp(bench, "alltoall"))
        collective(ALLTOALL, p, f);
    else if (!strcmp(bench, "alltoall_persistent"))
        collective(ALLTOALL_PERSISTENT, p, f);
    else if (!strcmp(bench, "barrier"))
        collective(BARRIER, p, f);
    else if (!strcmp(bench, "barrier_persistent"))
        collective(BARRIER_PERSISTENT, p, f);
    else if (!strcmp(bench, "pingpong"))
        imb(PINGPONG, p, f);
    else if (!strcmp(bench, "pingping"))
        imb(PINGPING, p, f);
    else if (!strcmp(bench, "sendrecv"))
        imb(SENDRECV, p, f);
    else if (!strcmp(bench, "exchange"))
        imb(EXCHANGE, p, f);
    else if (!strcmp(bench, "put_latency"))
        rma_latency(PUT, p, f);
    else if (!strcmp(bench, "get_latency"))
        rma_latency(GET, p, f);
    else if (!strcmp(bench, "acc_latency"))
        rma_latency(ACC, p, f);
    else if (!strcmp(bench, "fop_latency"))
        rma_latency(FOP, p, f);
    else if (!strcmp(bench, "cas_latency"))
        rma_latency(CAS, p, f);
    else if (!strcmp(bench, "put_bw"))
        put_bw(p, f);
    else
        fail("unknown benchmark");
}

int main(int argc, char **argv)
{
    struct plan *plans;
    int nplans, reps, i, rep, len;
    long maxsize = 0;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    const char *bench;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 5)
        fail("usage: mpbench_mpi BENCH REPS WINDOW SIZE:ITERS:SKIP...");
    bench = argv[1];
    reps = atoi(argv[2]);
    window = atoi(argv[3]);
    if (reps < 1 || window < 1)
        fail("REPS and WINDOW must be positive");
    nplans = argc - 4;
    plans = calloc(nplans, sizeof *plans);
    if (!plans)
        fail("out of memory");
    for (i = 0; i < nplans; i++) {
        if (sscanf(argv[4 + i], "%ld:%d:%d", &plans[i].size, &plans[i].iters, &plans[i].skip) != 3 ||
            plans[i].size < 0 || plans[i].iters < 1 || plans[i].skip < 0)
            fail("bad SIZE:ITERS:SKIP");
        if (plans[i].size > maxsize)
            maxsize = plans[i].size;
    }
    /* Buffers as the Go side's: n blocks for allgather and alltoall, two
     * receive blocks for Exchange, at least the 4-byte ack. */
    {
        size_t s = maxsize < 4 ? 4 : maxsize, r = s;
        if (!strcmp(bench, "alltoall") || !strcmp(bench, "alltoall_persistent"))
            s *= nranks, r *= nranks;
        else if (!strcmp(bench, "allgather") || !strcmp(bench, "allgather_persistent"))
            r *= nranks;
        else if (!strcmp(bench, "exchange"))
            r *= 2;
        sbuf = alloc(s);
        rbuf = alloc(r);
        fsend = alloc(s);
        frecv = alloc(r);
        for (i = 0; i < (int)(s / sizeof(float)); i++)
            fsend[i] = 1;
    }
    reqs = calloc(2 * window + 2, sizeof *reqs);
    if (!reqs)
        fail("out of memory");

    MPI_Get_library_version(version, &len);
    if (rank == 0) {
        version[strcspn(version, "\n")] = 0;
        printf("V %s\n", version);
        fflush(stdout);
    }
    for (rep = 0; rep < reps; rep++) {
        for (i = 0; i < nplans; i++) {
            double f[NFIG] = {0};
            MPI_Barrier(MPI_COMM_WORLD); /* as the Go side, before every size */
            run(bench, &plans[i], f);
            if (rank == 0) {
                printf("R %d %d %ld %.9g %.9g %.9g %.9g %.9g\n", rep, i, plans[i].size, f[LAT], f[MIN], f[MAX],
                       f[BW], f[RATE]);
                fflush(stdout);
            }
        }
    }
    MPI_Finalize();
    return 0;
}
