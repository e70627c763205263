/* hr_reduce: the S-Caffe hierarchical reduce designs as an OSU-style micro-benchmark.
 *
 * Modes (--algorithm): mpi (the library's MPI_Reduce), binomial, chain (flat chunked
 * chain), cb / cc (two-level chain-binomial / chain-chain with --chain ranks per lower
 * chain), tuned (per size the fastest of these, from --table or an in-run tuning pass),
 * model-bin / model-cc (eq. (1)/(2) of the paper from a measured pairwise reduce time).
 * --train runs a data-parallel SGD loop whose gradient reduce uses the chosen algorithm.
 * Every measured reduce is verified on the root; a mismatch aborts the job. */
#include "hr_reduce.h"

#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum alg { ALG_MPI, ALG_BINOMIAL, ALG_CHAIN, ALG_CB, ALG_CC, ALG_TUNED, ALG_MODEL_BIN, ALG_MODEL_CC };
static const char *ALG_NAMES[] = {"mpi", "binomial", "chain", "cb", "cc", "tuned", "model-bin", "model-cc"};
#define N_ALGS ((int)(sizeof ALG_NAMES / sizeof ALG_NAMES[0]))

#define AUTO_CHUNK_BYTES (1u << 20) /* --chunks auto: about 1 MiB per chunk ... */
#define AUTO_MAX_CHUNKS 64          /* ... and at most this many */
#define TUNE_ITERS 3                /* timed iterations per candidate when tuning in-run */
#define MAX_TABLE 4096

struct options {
    enum alg alg;
    int chain;          /* 0: not given */
    int chunks;         /* 0: auto */
    size_t min_bytes, max_bytes;
    int iterations, warmup;
    const char *table_in, *table_out;
    int train_iters;    /* > 0: training-loop mode */
    size_t grad_bytes;
    int batch;
    double lr;
    int corrupt;        /* tests: the last rank's input is off by one, verification must fail */
    const char *gpu_buffers; /* device, managed, auto; NULL: the build's default */
};

struct choice {
    int procs;
    size_t bytes;
    enum alg alg;
    int chain, chunks;
};

static int g_rank, g_size;

/* ------------------------------------------------------------------ options */

static int fail_usage(const char *fmt, const char *arg)
{
    if (g_rank == 0) {
        fprintf(stderr, "hr_reduce: error: ");
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\n(run with --help for the options)\n");
    }
    return 2;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < -1000000000L || v > 1000000000L)
        return -1;
    *out = (int)v;
    return 0;
}

static void usage(void)
{
    if (g_rank != 0)
        return;
    printf("usage: hr_reduce [options]\n"
           "  -a, --algorithm A   mpi | binomial | chain | cb | cc | tuned | model-bin | model-cc\n"
           "  -k, --chain K       ranks per lower-level chain (cb, cc; tuned: the only chain size tried)\n"
           "  -n, --chunks N      chunks of the chunked chain, >= 1, or 'auto' (~1 MiB each, at most 64)\n"
           "  -m, --sizes MIN:MAX message sizes in bytes (multiples of 4), powers of 2 from MIN to MAX\n"
           "  -i, --iterations N  timed iterations per size;  -x, --warmup N  untimed ones\n"
           "      --table FILE    tuned: take the choice per size from FILE (see --table-out)\n"
           "      --table-out F   tuned: write the choices made by the in-run tuning pass to F\n"
           "      --train N       training loop: N SGD iterations, gradient reduce by --algorithm\n"
           "      --grad-bytes B  training loop: gradient size in bytes;  --batch R  rows per rank\n"
           "      --gpu-buffers M device (cudaMalloc, CUDA-aware MPI, additions on the GPU) | managed\n"
           "                      (cudaMallocManaged, additions on the host) | auto (device if the MPI is\n"
           "                      CUDA-aware, else managed; the default of a CUDA build)\n"
           "      --corrupt-input (tests) the last rank adds 1 to its first input element\n");
}

static int parse_options(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        {"algorithm", required_argument, 0, 'a'}, {"chain", required_argument, 0, 'k'},
        {"chunks", required_argument, 0, 'n'},    {"sizes", required_argument, 0, 'm'},
        {"iterations", required_argument, 0, 'i'}, {"warmup", required_argument, 0, 'x'},
        {"table", required_argument, 0, 'T'},     {"table-out", required_argument, 0, 'O'},
        {"train", required_argument, 0, 't'},     {"grad-bytes", required_argument, 0, 'g'},
        {"batch", required_argument, 0, 'b'},     {"help", no_argument, 0, 'h'},
        {"corrupt-input", no_argument, 0, 'C'},   {"gpu-buffers", required_argument, 0, 'G'},
        {0, 0, 0, 0}};
    *o = (struct options){.alg = ALG_MPI, .min_bytes = 4, .max_bytes = 1u << 20,
                          .iterations = 20, .warmup = 5, .grad_bytes = 1u << 24, .batch = 2,
                          .lr = 0.5};
    int c, have_alg = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "a:k:n:m:i:x:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'a': {
            int found = -1;
            for (int i = 0; i < N_ALGS; i++)
                if (strcmp(optarg, ALG_NAMES[i]) == 0)
                    found = i;
            if (found < 0)
                return fail_usage("unknown --algorithm '%s' (mpi, binomial, chain, cb, cc, tuned, "
                                  "model-bin, model-cc)", optarg);
            o->alg = (enum alg)found;
            have_alg = 1;
            break;
        }
        case 'k':
            if (parse_int(optarg, &o->chain) || o->chain < 1)
                return fail_usage("--chain '%s': must be a whole number of ranks >= 1", optarg);
            break;
        case 'n':
            if (strcmp(optarg, "auto") == 0) {
                o->chunks = 0;
            } else if (parse_int(optarg, &o->chunks) || o->chunks < 1) {
                return fail_usage("--chunks '%s': the chunk count must be >= 1 (or 'auto')", optarg);
            }
            break;
        case 'm': {
            char buf[64];
            snprintf(buf, sizeof buf, "%s", optarg);
            char *colon = strchr(buf, ':');
            if (!colon)
                return fail_usage("--sizes '%s': expected MIN:MAX in bytes", optarg);
            *colon = '\0';
            if (parse_size(buf, &o->min_bytes) || parse_size(colon + 1, &o->max_bytes))
                return fail_usage("--sizes '%s': MIN and MAX must be byte counts", optarg);
            if (o->min_bytes < 4 || o->min_bytes % 4 || o->max_bytes % 4 || o->max_bytes < o->min_bytes)
                return fail_usage("--sizes '%s': sizes must be multiples of 4 bytes, 4 <= MIN <= MAX",
                                  optarg);
            break;
        }
        case 'i':
            if (parse_int(optarg, &o->iterations) || o->iterations < 1)
                return fail_usage("--iterations '%s': must be >= 1", optarg);
            break;
        case 'x':
            if (parse_int(optarg, &o->warmup) || o->warmup < 0)
                return fail_usage("--warmup '%s': must be >= 0", optarg);
            break;
        case 'T': o->table_in = optarg; break;
        case 'O': o->table_out = optarg; break;
        case 't':
            if (parse_int(optarg, &o->train_iters) || o->train_iters < 1)
                return fail_usage("--train '%s': the iteration count must be >= 1", optarg);
            break;
        case 'g':
            if (parse_size(optarg, &o->grad_bytes) || o->grad_bytes < 4 || o->grad_bytes % 4)
                return fail_usage("--grad-bytes '%s': a positive multiple of 4 bytes", optarg);
            break;
        case 'b':
            if (parse_int(optarg, &o->batch) || o->batch < 1)
                return fail_usage("--batch '%s': rows per rank must be >= 1", optarg);
            break;
        case 'C': o->corrupt = 1; break;
        case 'G':
            if (strcmp(optarg, "device") && strcmp(optarg, "managed") && strcmp(optarg, "auto"))
                return fail_usage("--gpu-buffers '%s': one of device, managed, auto", optarg);
            o->gpu_buffers = optarg;
            break;
        case 'h': usage(); return 1;
        default:
            return fail_usage("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return fail_usage("unexpected argument '%s'", argv[optind]);
    (void)have_alg;
    char msg[160];
    if ((o->alg == ALG_CB || o->alg == ALG_CC) && o->chain == 0)
        return fail_usage("--algorithm %s needs --chain K (ranks per lower-level chain)",
                          ALG_NAMES[o->alg]);
    if (o->chain > g_size) {
        snprintf(msg, sizeof msg, "%d is larger than the communicator (%d ranks)", o->chain, g_size);
        return fail_usage("--chain %s", msg);
    }
    if ((o->alg == ALG_MODEL_BIN || o->alg == ALG_MODEL_CC) && g_size < 2)
        return fail_usage("--algorithm %s needs at least 2 ranks to time a pairwise reduce",
                          ALG_NAMES[o->alg]);
    if (o->table_in && o->alg != ALG_TUNED)
        return fail_usage("--table '%s' only applies to --algorithm tuned", o->table_in);
    if (o->table_out && (o->alg != ALG_TUNED || o->table_in))
        return fail_usage("--table-out '%s' needs --algorithm tuned without --table", o->table_out);
    if (o->train_iters && (o->alg == ALG_MODEL_BIN || o->alg == ALG_MODEL_CC))
        return fail_usage("--train with --algorithm %s: a model is not a reduce", ALG_NAMES[o->alg]);
    return 0;
}

/* ------------------------------------------------------------------ buffers */

/* host memory for what is computed or checked on the host (inputs, sums, the SGD model) */
static float *host_floats(size_t count)
{
    float *p = malloc((count ? count : 1) * sizeof(float));
    if (!p)
        hr_die(MPI_COMM_WORLD, "cannot allocate %zu floats of host memory", count);
    return p;
}

/* Each rank contributes (rank + 1) * (i % 7 + 1): small integers, so the float sum is exact
 * and the root can check every element against P (P + 1) / 2 * (i % 7 + 1). */
static void fill_send(float *buf, size_t count, int rank)
{
    for (size_t i = 0; i < count; i++)
        buf[i] = (float)((rank + 1) * (int)(i % 7 + 1));
}

static void verify_sum(const float *got, size_t count, int ranks_summed, const char *what, size_t bytes)
{
    double factor = ranks_summed * (ranks_summed + 1) / 2.0;
    for (size_t i = 0; i < count; i++) {
        double want = factor * (double)(i % 7 + 1);
        if ((double)got[i] != want)
            hr_die(MPI_COMM_WORLD,
                   "VERIFICATION FAILED: %s at %zu bytes: element %zu is %.9g, expected %.9g",
                   what, bytes, i, (double)got[i], want);
    }
}

/* ------------------------------------------------------------------ algorithms */

static int auto_chunks(size_t bytes)
{
    size_t n = (bytes + AUTO_CHUNK_BYTES - 1) / AUTO_CHUNK_BYTES;
    return (int)(n < 1 ? 1 : n > AUTO_MAX_CHUNKS ? AUTO_MAX_CHUNKS : n);
}

/* two-level communicators per chain size, built once and kept for the run */
static struct hr_levels g_levels[65];

static const struct hr_levels *levels_for(int chain)
{
    if (chain > 64)
        hr_die(MPI_COMM_WORLD, "chain size %d: at most 64 supported", chain);
    if (g_levels[chain].chain == 0 &&
        hr_two_level_setup(MPI_COMM_WORLD, chain, &g_levels[chain]) != 0)
        hr_die(MPI_COMM_WORLD, "chain size %d is not within 1..%d ranks", chain, g_size);
    return &g_levels[chain];
}

/* One reduce of `count` floats by `alg`; `work` holds this rank's data and on rank 0
 * receives the sum (for mpi, `send` is the input and `work` the output). */
static void run_reduce(enum alg alg, int chain, int chunks, const float *send, float *work,
                       float *tmp, size_t count)
{
    switch (alg) {
    case ALG_MPI:
        MPI_Reduce(send, work, (int)count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case ALG_BINOMIAL: hr_binomial(MPI_COMM_WORLD, work, tmp, count); break;
    case ALG_CHAIN: hr_chain(MPI_COMM_WORLD, work, tmp, count, chunks); break;
    case ALG_CB: hr_two_level(levels_for(chain), HR_UPPER_BINOMIAL, work, tmp, count, chunks); break;
    case ALG_CC: hr_two_level(levels_for(chain), HR_UPPER_CHAIN, work, tmp, count, chunks); break;
    default: hr_die(MPI_COMM_WORLD, "internal: %s is not a reduce", ALG_NAMES[alg]);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct stats {
    double avg, min, max, median; /* microseconds */
};

/* Per iteration the slowest rank's time (the collective is done when its last rank is),
 * then avg/min/max/median over iterations; identical on every rank. */
static struct stats summarize(double *t, int n)
{
    MPI_Allreduce(MPI_IN_PLACE, t, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    struct stats s = {0, DBL_MAX, 0, 0};
    for (int i = 0; i < n; i++) {
        s.avg += t[i] / n;
        s.min = t[i] < s.min ? t[i] : s.min;
        s.max = t[i] > s.max ? t[i] : s.max;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    s.median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    s.avg *= 1e6; s.min *= 1e6; s.max *= 1e6; s.median *= 1e6;
    return s;
}

/* Time `iters` reduces after `warmup` untimed ones; the last result stays in `work`. Every
 * buffer is one of buffers.c. */
static struct stats time_reduce(enum alg alg, int chain, int chunks, const float *send, float *work,
                                float *tmp, size_t count, int warmup, int iters)
{
    double *t = malloc(sizeof(double) * (size_t)iters);
    if (!t)
        hr_die(MPI_COMM_WORLD, "out of memory");
    for (int it = -warmup; it < iters; it++) {
        hr_buf_copy(work, send, count); /* the designs reduce in place */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        run_reduce(alg, chain, chunks, send, work, tmp, count);
        double dt = MPI_Wtime() - t0;
        if (it >= 0)
            t[it] = dt;
    }
    struct stats s = summarize(t, iters);
    free(t);
    return s;
}

/* Time of one pairwise reduce step: rank 1 sends `count` floats, rank 0 receives and adds
 * them to its own; t(b) of eq. (1) with count = b, t(c) of eq. (2) with count = c. */
static struct stats time_pair(const float *send, float *work, float *tmp, size_t count,
                              int warmup, int iters)
{
    double *t = malloc(sizeof(double) * (size_t)iters);
    if (!t)
        hr_die(MPI_COMM_WORLD, "out of memory");
    for (int it = -warmup; it < iters; it++) {
        hr_buf_copy(work, send, count);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (g_rank == 1) {
            hr_send(work, count, 0, 0, MPI_COMM_WORLD);
        } else if (g_rank == 0) {
            hr_recv(tmp, count, 1, 0, MPI_COMM_WORLD);
            hr_buf_add(work, tmp, count);
        }
        double dt = MPI_Wtime() - t0;
        if (it >= 0)
            t[it] = dt;
    }
    struct stats s = summarize(t, iters);
    free(t);
    return s;
}

/* ------------------------------------------------------------------ tuning table */

static struct choice g_table[MAX_TABLE];
static int g_table_len;

static void read_table(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        hr_die(MPI_COMM_WORLD, "--table %s: cannot open: %s", path, strerror(errno));
    char line[256], name[32];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
            continue;
        struct choice c;
        unsigned long long bytes;
        if (sscanf(line, "%d %llu %31s %d %d", &c.procs, &bytes, name, &c.chain, &c.chunks) != 5)
            hr_die(MPI_COMM_WORLD, "--table %s line %d: expected 'procs bytes algorithm chain chunks'",
                   path, lineno);
        c.bytes = (size_t)bytes;
        int found = -1;
        for (int i = ALG_BINOMIAL; i <= ALG_CC; i++)
            if (strcmp(name, ALG_NAMES[i]) == 0)
                found = i;
        if (found < 0 || c.chunks < 0 || c.procs < 1 ||
            ((found == ALG_CB || found == ALG_CC) && (c.chain < 1 || c.chain > c.procs)))
            hr_die(MPI_COMM_WORLD, "--table %s line %d: bad entry (algorithm one of binomial, chain, "
                   "cb, cc; 1 <= chain <= procs; chunks >= 0, 0 = auto)", path, lineno);
        c.alg = (enum alg)found;
        if (g_table_len == MAX_TABLE)
            hr_die(MPI_COMM_WORLD, "--table %s: more than %d entries", path, MAX_TABLE);
        g_table[g_table_len++] = c;
    }
    fclose(f);
    if (g_table_len == 0)
        hr_die(MPI_COMM_WORLD, "--table %s: no entries", path);
}

/* The entry for the largest table process count <= P (else the smallest), and within it
 * the smallest size >= bytes (else the largest size). */
static struct choice table_lookup(size_t bytes)
{
    int procs = -1, smallest = -1;
    for (int i = 0; i < g_table_len; i++) {
        int p = g_table[i].procs;
        if (p <= g_size && p > procs)
            procs = p;
        if (smallest < 0 || p < smallest)
            smallest = p;
    }
    if (procs < 0)
        procs = smallest;
    const struct choice *best = NULL, *largest = NULL;
    for (int i = 0; i < g_table_len; i++) {
        const struct choice *c = &g_table[i];
        if (c->procs != procs)
            continue;
        if (!largest || c->bytes > largest->bytes)
            largest = c;
        if (c->bytes >= bytes && (!best || c->bytes < best->bytes))
            best = c;
    }
    struct choice out = best ? *best : *largest;
    if ((out.alg == ALG_CB || out.alg == ALG_CC) && out.chain > g_size)
        out.alg = ALG_BINOMIAL; /* a table made for more ranks: no chain of that size here */
    return out;
}

/* In-run tuning: every candidate a few times, the fastest median wins (same on all ranks,
 * because the times are the maxima over ranks). */
static struct choice tune_size(const struct options *o, const float *send, float *work, float *tmp,
                               size_t count, size_t bytes)
{
    int chunks = o->chunks ? o->chunks : auto_chunks(bytes);
    struct choice cand[16];
    int nc = 0;
    cand[nc++] = (struct choice){g_size, bytes, ALG_BINOMIAL, 0, chunks};
    cand[nc++] = (struct choice){g_size, bytes, ALG_CHAIN, 0, chunks};
    static const int chains[] = {2, 4, 8};
    for (int i = 0; i < 3; i++) {
        int k = o->chain ? o->chain : chains[i];
        if (k > 1 && k < g_size) {
            cand[nc++] = (struct choice){g_size, bytes, ALG_CB, k, chunks};
            cand[nc++] = (struct choice){g_size, bytes, ALG_CC, k, chunks};
        }
        if (o->chain)
            break;
    }
    struct choice best = cand[0];
    double best_t = DBL_MAX;
    for (int i = 0; i < nc; i++) {
        struct stats s = time_reduce(cand[i].alg, cand[i].chain, cand[i].chunks, send, work, tmp,
                                     count, 1, TUNE_ITERS);
        if (s.median < best_t) {
            best_t = s.median;
            best = cand[i];
        }
    }
    return best;
}

/* ------------------------------------------------------------------ output */

static void print_header(const struct options *o, const char *title)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    for (char *p = lib; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    if (len > 96) /* MPICH appends its whole configure line */
        snprintf(lib + 93, 4, "...");
    char chunks[32];
    if (o->chunks)
        snprintf(chunks, sizeof chunks, "%d", o->chunks);
    else
        snprintf(chunks, sizeof chunks, "auto (~%u KiB each, 1..%d)", AUTO_CHUNK_BYTES / 1024,
                 AUTO_MAX_CHUNKS);
    printf("# %s (dlobd hr-reduce %s)\n", title, HR_VERSION);
    printf("# Algorithm: %s\n", ALG_NAMES[o->alg]);
    if (o->chain)
        printf("# Chain size: %d\n", o->chain);
    else
        printf("# Chain size: none\n");
    printf("# Chunks: %s\n", chunks);
    printf("# Ranks: %d\n", g_size);
    printf("# MPI library: %s\n", lib);
    printf("# Buffers: %s\n", hr_buffers_description());
    printf("# Datatype: float, operation: sum, root: 0\n");
}

/* ------------------------------------------------------------------ modes */

/* --gpu-buffers: a refusal ends the job with status 2 and the reason, like a wrong option */
static int choose_buffers(const struct options *o)
{
    char why[512] = "";
    if (hr_buffers_select(o->gpu_buffers, why, sizeof why) != 0) {
        if (g_rank == 0)
            fprintf(stderr, "hr_reduce: error: %s\n", why);
        return 2;
    }
    if (g_rank == 0 && hr_buffers_fallback())
        fprintf(stderr, "hr_reduce: --gpu-buffers auto: falling back to CUDA managed memory with the "
                "additions on the host: %s\n", hr_buffers_fallback());
    return 0;
}

static int run_sweep(const struct options *o)
{
    size_t max_count = o->max_bytes / sizeof(float);
    float *send = hr_buf_alloc(max_count), *work = hr_buf_alloc(max_count), *tmp = hr_buf_alloc(max_count);
    float *host = host_floats(max_count); /* the input before upload, the result to verify */
    fill_send(host, max_count, g_rank);
    if (o->corrupt && g_rank == g_size - 1)
        host[0] += 1.0f;
    hr_buf_upload(send, host, max_count);
    int model = (o->alg == ALG_MODEL_BIN || o->alg == ALG_MODEL_CC);
    FILE *table_out = NULL;
    if (o->alg == ALG_TUNED && o->table_in)
        read_table(o->table_in);
    if (o->table_out && g_rank == 0 && !(table_out = fopen(o->table_out, "w")))
        hr_die(MPI_COMM_WORLD, "--table-out %s: cannot write: %s", o->table_out, strerror(errno));
    if (table_out)
        fprintf(table_out, "# hr-reduce tuning table, %d ranks: procs bytes algorithm chain chunks\n",
                g_size);

    if (g_rank == 0) {
        print_header(o, model ? "HR-Reduce cost model" : "HR-Reduce latency test");
        printf("# Latency: per iteration the slowest rank's time; avg/min/max/median over iterations\n");
        if (model) {
            if (o->alg == ALG_MODEL_BIN)
                printf("# Model: eq. (1) T(Bin) = ceil(log2 P) * t(b), t(b) measured: rank 1 sends b, "
                       "rank 0 receives and adds\n");
            else
                printf("# Model: eq. (2) T(CC) = (n + P - 2) * t(c), c = b / n, t(c) measured: rank 1 "
                       "sends c, rank 0 receives and adds\n");
            printf("%-12s%20s%20s%12s%14s%12s\n", "# Size", "Predicted(us)", "Unit time(us)", "Factor",
                   "Unit bytes", "Iterations");
        } else {
            printf("%-12s%18s%18s%18s%18s%12s%8s%8s  %s\n", "# Size", "Avg Latency(us)", "Min Latency(us)",
                   "Max Latency(us)", "Median(us)", "Iterations", "Chunks", "Chain", "Choice");
        }
        fflush(stdout);
    }
    int sizes = 0;
    for (size_t bytes = o->min_bytes; bytes <= o->max_bytes; bytes = bytes * 2) {
        size_t count = bytes / sizeof(float);
        int chunks = o->chunks ? o->chunks : auto_chunks(bytes);
        if (model) {
            double factor;
            size_t unit = count;
            if (o->alg == ALG_MODEL_BIN) {
                factor = ceil(log2((double)g_size));
            } else {
                int n = (size_t)chunks > count ? (int)count : chunks;
                unit = (count + (size_t)n - 1) / (size_t)n; /* the largest chunk */
                factor = n + g_size - 2;
                chunks = n;
            }
            struct stats s = time_pair(send, work, tmp, unit, o->warmup, o->iterations);
            if (g_rank == 0) {
                hr_buf_download(host, work, unit);
                verify_sum(host, unit, 2, ALG_NAMES[o->alg], unit * sizeof(float));
                printf("%-12zu%20.2f%20.2f%12.0f%14zu%12d\n", bytes, factor * s.median, s.median, factor,
                       unit * sizeof(float), o->iterations);
            }
        } else {
            struct choice c = {g_size, bytes, o->alg, o->chain, chunks};
            if (o->alg == ALG_TUNED) {
                c = o->table_in ? table_lookup(bytes) : tune_size(o, send, work, tmp, count, bytes);
                if (c.chunks == 0)
                    c.chunks = chunks;
                if (table_out)
                    fprintf(table_out, "%d %zu %s %d %d\n", g_size, bytes, ALG_NAMES[c.alg], c.chain,
                            c.chunks);
            }
            struct stats s = time_reduce(c.alg, c.chain, c.chunks, send, work, tmp, count, o->warmup,
                                         o->iterations);
            if (g_rank == 0) {
                hr_buf_download(host, work, count);
                verify_sum(host, count, g_size, ALG_NAMES[o->alg], bytes);
                char choice[32];
                if (c.alg == ALG_CB || c.alg == ALG_CC)
                    snprintf(choice, sizeof choice, "%s-%d", ALG_NAMES[c.alg], c.chain);
                else
                    snprintf(choice, sizeof choice, "%s", ALG_NAMES[c.alg]);
                int uses_chunks = c.alg != ALG_MPI && c.alg != ALG_BINOMIAL;
                printf("%-12zu%18.2f%18.2f%18.2f%18.2f%12d%8d%8d  %s\n", bytes, s.avg, s.min, s.max,
                       s.median, o->iterations, uses_chunks ? c.chunks : 0,
                       (c.alg == ALG_CB || c.alg == ALG_CC) ? c.chain : 0, choice);
            }
        }
        if (g_rank == 0)
            fflush(stdout);
        sizes++;
        if (bytes > SIZE_MAX / 2)
            break;
    }
    if (table_out)
        fclose(table_out);
    if (g_rank == 0)
        printf("# Verified: %d sizes, the reduced result on rank 0 matched the expected sum\n", sizes);
    hr_buf_free(send);
    hr_buf_free(work);
    hr_buf_free(tmp);
    free(host);
    return 0;
}

/* Training loop: data-parallel SGD on a synthetic least-squares problem. Each rank holds
 * `batch` rows of X (d = grad_bytes / 4 columns) and targets y = X w* from a seeded
 * generator; per iteration the root broadcasts w (propagation), every rank computes its
 * gradient X^T (X w - y) / batch (forward_backward, with the root's update), and the
 * gradients are summed on the root by the chosen algorithm (aggregation). The model and its
 * gradient are host memory; the reduce runs on buffers.c's buffers (on GPU builds the gradient
 * is uploaded and the sum downloaded outside the timed phases). */
static uint64_t g_seed;

static float next_uniform(void)
{
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(g_seed >> 11) / (double)(1ULL << 53) * 2.0 - 1.0);
}

static int run_train(const struct options *o)
{
    size_t d = o->grad_bytes / sizeof(float);
    size_t rows = (size_t)o->batch;
    float *x = host_floats(rows * d), *y = host_floats(rows), *w = host_floats(d);
    float *grad = host_floats(d), *sum = host_floats(d);
    float *send = hr_buf_alloc(d), *work = hr_buf_alloc(d), *tmp = hr_buf_alloc(d);
    float scale = (float)(1.0 / sqrt((double)d)); /* rows of norm ~ 1/sqrt(3): a stable step */
    g_seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t)(g_rank + 1);
    for (size_t r = 0; r < rows; r++) {
        double yr = 0;
        for (size_t j = 0; j < d; j++) {
            x[r * d + j] = next_uniform() * scale;
            yr += x[r * d + j] * (float)((j % 13) / 13.0); /* w*: a fixed pattern */
        }
        y[r] = (float)yr;
    }
    memset(w, 0, d * sizeof(float));
    if (o->corrupt)
        hr_die(MPI_COMM_WORLD, "--corrupt-input applies to the latency test, not --train");
    int chunks = o->chunks ? o->chunks : auto_chunks(o->grad_bytes);
    struct choice c = {g_size, o->grad_bytes, o->alg, o->chain, chunks};
    if (o->alg == ALG_TUNED) {
        fill_send(grad, d, g_rank);
        hr_buf_upload(send, grad, d);
        c = o->table_in ? (read_table(o->table_in), table_lookup(o->grad_bytes))
                        : tune_size(o, send, work, tmp, d, o->grad_bytes);
        if (c.chunks == 0)
            c.chunks = chunks;
    }
    int iters = o->train_iters;
    double *tp = calloc((size_t)iters * 3, sizeof(double));
    double *loss = calloc((size_t)iters, sizeof(double));
    if (!tp || !loss)
        hr_die(MPI_COMM_WORLD, "out of memory");
    if (g_rank == 0) {
        print_header(o, "HR-Reduce training loop (synthetic data-parallel least squares)");
        printf("# Choice: %s%s%.0d, chunks %d\n", ALG_NAMES[c.alg],
               (c.alg == ALG_CB || c.alg == ALG_CC) ? "-" : "",
               (c.alg == ALG_CB || c.alg == ALG_CC) ? c.chain : 0,
               (c.alg == ALG_MPI || c.alg == ALG_BINOMIAL) ? 0 : c.chunks);
        printf("# Gradient bytes: %zu, rows per rank: %d, learning rate: %g, data: synthetic\n",
               o->grad_bytes, o->batch, o->lr);
        printf("# Phase time: per iteration the slowest rank's time in that phase (barrier before each)\n");
        printf("%-8s%16s%18s%22s%18s\n", "# Iter", "Loss", "Propagation(s)", "ForwardBackward(s)",
               "Aggregation(s)");
        fflush(stdout);
    }
    for (int it = 0; it < iters; it++) {
        double t0;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        MPI_Bcast(w, (int)d, MPI_FLOAT, 0, MPI_COMM_WORLD);
        tp[it * 3 + 0] = MPI_Wtime() - t0;

        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        double local_loss = 0;
        memset(grad, 0, d * sizeof(float));
        for (size_t r = 0; r < rows; r++) {
            const float *xr = x + r * d;
            double pred = 0;
            for (size_t j = 0; j < d; j++)
                pred += xr[j] * w[j];
            float err = (float)(pred - y[r]);
            local_loss += 0.5 * (double)err * err / (double)rows;
            for (size_t j = 0; j < d; j++)
                grad[j] += err * xr[j] / (float)rows;
        }
        tp[it * 3 + 1] = MPI_Wtime() - t0;

        hr_buf_upload(send, grad, d);
        hr_buf_copy(work, send, d);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        run_reduce(c.alg, c.chain, c.chunks, send, work, tmp, d);
        tp[it * 3 + 2] = MPI_Wtime() - t0;
        if (g_rank == 0)
            hr_buf_download(sum, work, d);

        if (it == 0 || it == iters - 1) {
            /* outside the timed phases: the same gradients through MPI_Reduce in double */
            double *gd = malloc(d * sizeof(double)), *ref = malloc(d * sizeof(double));
            if (!gd || !ref)
                hr_die(MPI_COMM_WORLD, "out of memory");
            double gmax = 0;
            for (size_t j = 0; j < d; j++) {
                gd[j] = grad[j];
                gmax = fabs(gd[j]) > gmax ? fabs(gd[j]) : gmax;
            }
            MPI_Allreduce(MPI_IN_PLACE, &gmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            MPI_Reduce(gd, ref, (int)d, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            double tol = (double)g_size * g_size * FLT_EPSILON * gmax + DBL_MIN;
            if (g_rank == 0)
                for (size_t j = 0; j < d; j++)
                    if (fabs(sum[j] - ref[j]) > tol)
                        hr_die(MPI_COMM_WORLD,
                               "VERIFICATION FAILED: training iteration %d: gradient element %zu is "
                               "%.9g, MPI_Reduce in double gives %.9g (tolerance %.3g)",
                               it + 1, j, (double)sum[j], ref[j], tol);
            free(gd);
            free(ref);
        }
        MPI_Reduce(&local_loss, &loss[it], 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);

        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if (g_rank == 0)
            for (size_t j = 0; j < d; j++)
                w[j] -= (float)(o->lr * sum[j] / g_size);
        tp[it * 3 + 1] += MPI_Wtime() - t0; /* the solver's update counts as compute */
    }
    MPI_Allreduce(MPI_IN_PLACE, tp, iters * 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == 0) {
        double sum[3] = {0, 0, 0};
        for (int it = 0; it < iters; it++) {
            for (int p = 0; p < 3; p++)
                sum[p] += tp[it * 3 + p];
            printf("%-8d%16.6g%18.6f%22.6f%18.6f\n", it + 1, loss[it] / g_size, tp[it * 3],
                   tp[it * 3 + 1], tp[it * 3 + 2]);
        }
        printf("# Total(s): train %.6f propagation %.6f forward_backward %.6f aggregation %.6f\n",
               sum[0] + sum[1] + sum[2], sum[0], sum[1], sum[2]);
        printf("# Verified: iterations 1 and %d, the reduced gradient matched MPI_Reduce in double\n", iters);
    }
    free(tp);
    free(loss);
    free(x); free(y); free(w); free(grad); free(sum);
    hr_buf_free(send); hr_buf_free(work); hr_buf_free(tmp);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    struct options o;
    int rc = parse_options(argc, argv, &o);
    if (rc == 0)
        rc = choose_buffers(&o);
    if (rc == 0)
        rc = o.train_iters ? run_train(&o) : run_sweep(&o);
    for (int k = 1; k <= 64; k++)
        if (g_levels[k].chain)
            hr_two_level_free(&g_levels[k]);
    MPI_Finalize();
    return rc == 1 ? 0 : rc; /* 1 = --help */
}
