/* The selector's schedules (src/model/schedule.h): every algorithm moves the data its
 * collective needs (followed round by round as sets of contributions, 1 to 13 ranks, any
 * root), a round costs what the model says on hand-worked cases, the choice between the
 * MPI's own and the WAN-aware algorithm follows the link classes; and the tuning file's
 * reader (coll_tuning.h) finds the rule for a call and names the line of a bad one. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "coll_cost.h"
#include "coll_tuning.h"

#include <string.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

#define MAXN 13

/* After the schedule, knows[i] holds the ranks whose contribution reached rank i (a rank
 * passes on everything it knew at the start of the round). */
static void flow(const struct ist_sched *s, int n, uint64_t *knows)
{
    for (int i = 0; i < n; i++) knows[i] = 1ull << i;
    for (int r = 0; r < s->rounds; r++) {
        uint64_t before[MAXN];
        for (int i = 0; i < n; i++) before[i] = knows[i];
        for (int k = 0; k < s->n; k++)
            if (s->m[k].round == r) knows[s->m[k].dst] |= before[s->m[k].src];
    }
}

enum need { TO_ALL_FROM_ROOT, TO_ROOT_FROM_ALL, ALL_FROM_ALL, PREFIX };

static void check_flow(const char *name, enum need need, int n, int root, const struct ist_sched *s)
{
    uint64_t knows[MAXN], all = (n == 64 ? ~0ull : (1ull << n) - 1);
    flow(s, n, knows);
    for (int i = 0; i < n; i++) {
        uint64_t want = need == TO_ALL_FROM_ROOT   ? 1ull << root
                        : need == TO_ROOT_FROM_ALL ? (i == root ? all : 0)
                        : need == PREFIX           ? (2ull << i) - 1
                                                   : all;
        CHECK((knows[i] & want) == want, "%s n=%d root=%d: rank %d lacks %#llx", name, n, root, i,
              (unsigned long long)(want & ~knows[i]));
    }
}

typedef int (*rooted_fn)(struct ist_sched *, int, struct ist_group, int, long);
typedef int (*plain_fn)(struct ist_sched *, int, struct ist_group, long);

static int pipeline_chain(struct ist_sched *s, int at, struct ist_group g, int root, long b)
{
    return ist_s_bcast_pipeline(s, at, g, root, b, 1000, 1);
}
static int pipeline_binary(struct ist_sched *s, int at, struct ist_group g, int root, long b)
{
    return ist_s_bcast_pipeline(s, at, g, root, b, 1000, 2);
}
static int scatter_ring(struct ist_sched *s, int at, struct ist_group g, int root, long b)
{
    return ist_s_bcast_scatter_allgather(s, at, g, root, b, 1);
}
static int rab_reduce(struct ist_sched *s, int at, struct ist_group g, int root, long b)
{
    return ist_s_rabenseifner(s, at, g, root, b, 0);
}
static int reduce_chain(struct ist_sched *s, int at, struct ist_group g, int root, long b)
{
    return ist_s_reduce_pipeline(s, at, g, root, b, 1000);
}
static int rab_all(struct ist_sched *s, int at, struct ist_group g, long b)
{
    return ist_s_rabenseifner(s, at, g, 0, b, 1);
}
static int pairwise_xor(struct ist_sched *s, int at, struct ist_group g, long b)
{
    return ist_s_alltoall_pairwise(s, at, g, b, 1);
}
static int pairwise_plus(struct ist_sched *s, int at, struct ist_group g, long b)
{
    return ist_s_alltoall_pairwise(s, at, g, b, 0);
}
static int barrier(struct ist_sched *s, int at, struct ist_group g, long b)
{
    (void)b;
    return ist_s_barrier_dissemination(s, at, g);
}
static int barrier_rd(struct ist_sched *s, int at, struct ist_group g, long b)
{
    (void)b;
    return ist_s_barrier_recursive_doubling(s, at, g);
}

static void algorithms(void)
{
    static const struct {
        const char *name;
        rooted_fn f;
        enum need need;
    } rooted[] = {
        {"bcast_binomial", ist_s_bcast_binomial, TO_ALL_FROM_ROOT},
        {"bcast_pipeline_chain", pipeline_chain, TO_ALL_FROM_ROOT},
        {"bcast_pipeline_binary", pipeline_binary, TO_ALL_FROM_ROOT},
        {"bcast_scatter_ring", scatter_ring, TO_ALL_FROM_ROOT},
        {"scatter_binomial", ist_s_scatter_binomial, TO_ALL_FROM_ROOT},
        {"scatter_linear", ist_s_scatter_linear, TO_ALL_FROM_ROOT},
        {"reduce_binomial", ist_s_reduce_binomial, TO_ROOT_FROM_ALL},
        {"reduce_linear", ist_s_reduce_linear, TO_ROOT_FROM_ALL},
        {"reduce_pipeline", reduce_chain, TO_ROOT_FROM_ALL},
        {"reduce_rabenseifner", rab_reduce, TO_ROOT_FROM_ALL},
        {"gather_binomial", ist_s_gather_binomial, TO_ROOT_FROM_ALL},
        {"gather_linear", ist_s_gather_linear, TO_ROOT_FROM_ALL},
    };
    static const struct {
        const char *name;
        plain_fn f;
        enum need need;
    } plain[] = {
        {"allreduce_recursive_doubling", ist_s_allreduce_recursive_doubling, ALL_FROM_ALL},
        {"allreduce_rabenseifner", rab_all, ALL_FROM_ALL},
        {"allreduce_ring", ist_s_allreduce_ring, ALL_FROM_ALL},
        {"allgather_ring", ist_s_allgather_ring, ALL_FROM_ALL},
        {"allgather_bruck", ist_s_allgather_bruck, ALL_FROM_ALL},
        {"allgather_recursive_doubling", ist_s_allgather_recursive_doubling, ALL_FROM_ALL},
        {"alltoall_linear", ist_s_alltoall_linear, ALL_FROM_ALL},
        {"alltoall_pairwise_xor", pairwise_xor, ALL_FROM_ALL},
        {"alltoall_pairwise_plus", pairwise_plus, ALL_FROM_ALL},
        {"alltoall_bruck", ist_s_alltoall_bruck, ALL_FROM_ALL},
        {"barrier_dissemination", barrier, ALL_FROM_ALL},
        {"barrier_recursive_doubling", barrier_rd, ALL_FROM_ALL},
        {"reduce_scatter_halving", ist_s_reduce_scatter_halving, ALL_FROM_ALL},
        {"reduce_scatter_pairwise", ist_s_reduce_scatter_pairwise, ALL_FROM_ALL},
        {"scan_recursive_doubling", ist_s_scan_recursive_doubling, PREFIX},
        {"scan_linear", ist_s_scan_linear, PREFIX},
    };
    int ranks[MAXN];
    for (int i = 0; i < MAXN; i++) ranks[i] = i;
    for (int n = 1; n <= MAXN; n++) {
        struct ist_group g = {ranks, n};
        for (size_t a = 0; a < sizeof rooted / sizeof *rooted; a++)
            for (int root = 0; root < n; root++) {
                struct ist_sched s;
                ist_sched_init(&s);
                int rounds = rooted[a].f(&s, 0, g, root, 4096);
                CHECK(rounds == s.rounds, "%s n=%d: %d rounds reported, %d used", rooted[a].name, n,
                      rounds, s.rounds);
                check_flow(rooted[a].name, rooted[a].need, n, root, &s);
                ist_sched_free(&s);
            }
        for (size_t a = 0; a < sizeof plain / sizeof *plain; a++) {
            struct ist_sched s;
            ist_sched_init(&s);
            int rounds = plain[a].f(&s, 0, g, 4096);
            CHECK(rounds == s.rounds, "%s n=%d: %d rounds reported, %d used", plain[a].name, n,
                  rounds, s.rounds);
            check_flow(plain[a].name, plain[a].need, n, 0, &s);
            ist_sched_free(&s);
        }
    }
}

/* One class: L, and os = or = 1 us + m/10000, g = 2 us + m * per_byte (points at 0, 1 MiB). */
static void set_class(struct ist_plogp_class *c, double L, double per_byte)
{
    static long sizes[2] = {0, 1L << 20};
    static double pool[8][3][2];
    static int used;
    int k = used++;
    c->present = 1;
    c->L = L;
    c->n = 2;
    c->sizes = sizes;
    for (int i = 0; i < 2; i++) {
        pool[k][0][i] = 1 + sizes[i] / 10000.0;
        pool[k][1][i] = 1 + sizes[i] / 10000.0;
        pool[k][2][i] = 2 + sizes[i] * per_byte;
    }
    c->os = pool[k][0];
    c->orecv = pool[k][1];
    c->g = pool[k][2];
}

static int near(double a, double b) { return fabs(a - b) <= 1e-6 * fmax(1, fabs(b)); }

static void costs(void)
{
    struct ist_plogp p = {0};
    set_class(&p.lan, 50, 0.001);  /* 1 GB/s */
    set_class(&p.wan, 5000, 0.01); /* 100 MB/s */
    int cluster[4] = {0, 0, 1, 1}, host[4] = {0, 1, 2, 3};
    struct ist_layout l = {4, 2, cluster, host, 0};
    struct ist_sched s;
    long m = 100000;

    /* one message across: L + g(m) */
    ist_sched_init(&s);
    ist_sched_msg(&s, 0, 0, 2, m, 0);
    CHECK(near(ist_sched_time(&s, &p, &l), 5000 + 2 + m * 0.01), "one WAN message: %g",
          ist_sched_time(&s, &p, &l));
    /* a second sender on the same link queues behind the first's bytes */
    ist_sched_msg(&s, 0, 1, 3, m, 0);
    CHECK(near(ist_sched_time(&s, &p, &l), 5000 + 2 + 2 * m * 0.01), "two on one link: %g",
          ist_sched_time(&s, &p, &l));
    ist_sched_free(&s);

    /* one sender, two messages: the second leaves one gap later */
    ist_sched_init(&s);
    ist_sched_msg(&s, 0, 0, 1, m, 0);
    ist_sched_msg(&s, 0, 0, 1, m, 0);
    CHECK(near(ist_sched_time(&s, &p, &l), 2 * (2 + m * 0.001) + 50), "two in a row: %g",
          ist_sched_time(&s, &p, &l));
    /* a later round's message leaves once its sender has what came to it before */
    ist_sched_msg(&s, 1, 1, 0, m, 0);
    CHECK(near(ist_sched_time(&s, &p, &l), 2 * (2 + m * 0.001) + 50 + (2 + m * 0.001) + 50),
          "two rounds: %g", ist_sched_time(&s, &p, &l));
    /* ... and not before: a rank that got nothing sends at once */
    ist_sched_msg(&s, 1, 2, 3, 8, 0);
    CHECK(near(ist_sched_time(&s, &p, &l), 2 * (2 + m * 0.001) + 50 + (2 + m * 0.001) + 50),
          "independent round: %g", ist_sched_time(&s, &p, &l));
    ist_sched_free(&s);

    /* ranks on one host: a copy, no latency */
    int one_host[4] = {0, 0, 2, 2};
    struct ist_layout shared = {4, 2, cluster, one_host, 0};
    ist_sched_init(&s);
    ist_sched_msg(&s, 0, 0, 1, m, 0);
    CHECK(near(ist_sched_time(&s, &p, &shared), 1 + m / 10000.0), "same host: %g",
          ist_sched_time(&s, &p, &shared));
    ist_sched_free(&s);

    /* the MPI's rendezvous: each library's handshake before a large message's data leave
     * (MPICH over UCX: two round trips from about 19.5 KB; Open MPI: one from 64 KiB);
     * the layer's eager segments never wait */
    const long kib32 = 32768, kib64 = 65536;
    const struct {
        enum ist_mpi_flavour f;
        long bytes;
        int flags;
        double waits; /* one-way latencies added */
    } rndv[] = {
        {IST_MPI_MPICH, 16384, 0, 0},
        {IST_MPI_MPICH, kib32, 0, 4},
        {IST_MPI_MPICH, kib32, IST_MSG_EAGER, 0},
        {IST_MPI_OPENMPI, kib32, 0, 0},
        {IST_MPI_OPENMPI, kib64, 0, 2},
        {IST_MPI_OPENMPI, kib64, IST_MSG_EAGER, 0},
    };
    for (size_t i = 0; i < sizeof rndv / sizeof rndv[0]; i++) {
        struct ist_mpi f = {rndv[i].f, 0};
        ist_sched_init(&s);
        s.rendezvous = ist_rendezvous_bytes(f);
        s.rendezvous_trips = ist_rendezvous_trips(f);
        ist_sched_msg(&s, 0, 0, 2, rndv[i].bytes, rndv[i].flags);
        double want = 5000 + 2 + rndv[i].bytes * 0.01 + rndv[i].waits * 5000;
        CHECK(near(ist_sched_time(&s, &p, &l), want), "rendezvous %s %ld B flags %d: %g, want %g",
              rndv[i].f == IST_MPI_MPICH ? "mpich" : "openmpi", rndv[i].bytes, rndv[i].flags,
              ist_sched_time(&s, &p, &l), want);
        ist_sched_free(&s);
    }
}

/* the 4 rule sets: Open MPI and MPICH, blocking and nonblocking */
static struct ist_mpi mpi_of(int f) { return (struct ist_mpi){(enum ist_mpi_flavour)(f % 2), f / 2}; }

static const char *chosen(enum ist_coll_id id, long bytes, struct ist_mpi f,
                          const struct ist_plogp *p, const struct ist_layout *l)
{
    static struct ist_choice c;
    ist_coll_choose(id, bytes, f, p, l, &c);
    CHECK(c.n >= 1 && c.c[0].native, "%s: the MPI's own is the first candidate", ist_coll_names[id]);
    for (int i = 0; i < c.n; i++)
        CHECK(c.c[i].time_us > 0 && isfinite(c.c[i].time_us), "%s %ld: %s costs %g",
              ist_coll_names[id], bytes, c.c[i].name, c.c[i].time_us);
    return c.c[c.best].native ? "native" : "ours";
}

static void choices(void)
{
    struct ist_plogp far = {0}, flat = {0};
    set_class(&far.lan, 50, 0.001);
    set_class(&far.wan, 10000, 0.01);
    set_class(&flat.lan, 50, 0.001);
    set_class(&flat.wan, 50, 0.001);
    int cluster[8] = {0, 0, 1, 1, 2, 2, 3, 3}, host[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    struct ist_layout l = {8, 4, cluster, host, 0};
    /* every candidate of every collective has a finite cost */
    for (int f = 0; f < 4; f++)
        for (int id = 0; id < IST_COLL_COUNT; id++)
            for (long b = 0; b <= 1L << 20; b = b ? 4 * b : 1)
                (void)chosen((enum ist_coll_id)id, b, mpi_of(f), &far, &l);
    /* a WAN as fast as the LAN: funnelling through coordinators only costs, the MPI's own
     * stays for the exchanges, small and large */
    /* (Open MPI's nonblocking Allreduce, a binomial reduce then a binomial broadcast, loses
     * to ours even there: not checked) */
    enum ist_coll_id exchanges[] = {IST_COLL_ALLREDUCE, IST_COLL_ALLGATHER, IST_COLL_ALLTOALL};
    for (int f = 0; f < 4; f++)
        for (size_t i = 0; i < sizeof exchanges / sizeof *exchanges; i++)
            for (long b = 8; b <= 1L << 20; b *= 128) {
                if (f == 2 && exchanges[i] == IST_COLL_ALLREDUCE) continue;
                const char *c = chosen(exchanges[i], b, mpi_of(f), &flat, &l);
                CHECK(c[0] == 'n', "%s %ld B on a flat network, rules %d: %s",
                      ist_coll_names[exchanges[i]], b, f, c);
            }
    /* a 10 ms WAN: one wide-area latency beats log2(8) of them (Open MPI's nonblocking
     * Allgather sends every block at once: one latency too, so it stays) */
    enum ist_coll_id latency_bound[] = {IST_COLL_BARRIER, IST_COLL_ALLREDUCE, IST_COLL_ALLGATHER,
                                        IST_COLL_BCAST};
    for (int f = 0; f < 4; f++)
        for (size_t i = 0; i < sizeof latency_bound / sizeof *latency_bound; i++) {
            const char *c = chosen(latency_bound[i], 8, mpi_of(f), &far, &l);
            int stays = f == 2 && latency_bound[i] == IST_COLL_ALLGATHER;
            CHECK(c[0] == (stays ? 'n' : 'o'), "%s, 8 B over 10 ms, rules %d: %s",
                  ist_coll_names[latency_bound[i]], f, c);
        }
    /* MPICH's 8-byte alltoall on 8 ranks is Bruck's, 3 rounds across; Open MPI's sends
     * every block at once, one wide-area latency like ours, which adds the cluster stages */
    struct ist_mpi mpich = {IST_MPI_MPICH, 0}, openmpi = {IST_MPI_OPENMPI, 0};
    CHECK(chosen(IST_COLL_ALLTOALL, 8, mpich, &far, &l)[0] == 'o', "MPICH alltoall");
    CHECK(chosen(IST_COLL_ALLTOALL, 8, openmpi, &far, &l)[0] == 'n', "Open MPI alltoall");
    /* ... but MPICH's nonblocking form (the layer's sleeping waits) sends every block at
     * once too (measured): the MPI's own stays */
    struct ist_mpi mpich_nb = {IST_MPI_MPICH, 1};
    struct ist_choice a;
    ist_coll_choose(IST_COLL_ALLTOALL, 8, mpich_nb, &far, &l, &a);
    CHECK(strcmp(a.c[0].name, "native (scattered)") == 0, "MPICH ialltoall: %s", a.c[0].name);
    CHECK(chosen(IST_COLL_ALLTOALL, 8, mpich_nb, &far, &l)[0] == 'n', "MPICH ialltoall chosen");
    /* a v-form is costed by its own rules: MPICH's Gatherv is linear (only the root knows
     * the counts), its Gather a binomial tree */
    struct ist_choice c;
    ist_coll_choose(IST_COLL_GATHERV, 1024, mpich, &far, &l, &c);
    CHECK(strcmp(c.c[0].name, "native (linear)") == 0, "MPICH gatherv: %s", c.c[0].name);
    ist_coll_choose(IST_COLL_GATHER, 1024, mpich, &far, &l, &c);
    CHECK(strcmp(c.c[0].name, "native (binomial)") == 0, "MPICH gather: %s", c.c[0].name);
    /* the linear algorithm in eager segments is MPICH's linear v-forms without their
     * rendezvous: never costed above them, well below once a block needs it, and within a
     * few percent once the blocks of a cluster would flood its wide-area link (one message
     * each, as the MPI's; a scatter sends those first, so that their rendezvous overlaps
     * the segments to the root's own cluster) */
    for (int v = 0; v < 2; v++)
        for (long b = 8; b <= 1L << 20; b *= 2) {
            enum ist_coll_id id = v ? IST_COLL_SCATTERV : IST_COLL_GATHERV;
            ist_coll_choose(id, b, mpich, &far, &l, &c);
            double linear = -1;
            for (int i = 0; i < c.n; i++)
                if (strcmp(c.c[i].name, "linear in eager segments") == 0) linear = c.c[i].time_us;
            CHECK(linear > 0 && linear <= c.c[0].time_us * (1 + 1e-9), "%s %ld: linear %g, native %g",
                  ist_coll_names[id], b, linear, c.c[0].time_us);
            if (b >= 32768 && ist_linear_in_segments(b, 2))
                CHECK(linear < 0.9 * c.c[0].time_us, "%s %ld: linear %g, native %g",
                      ist_coll_names[id], b, linear, c.c[0].time_us);
            if (!ist_linear_in_segments(b, 2))
                CHECK(linear >= c.c[0].time_us * 0.95, "%s %ld: flooding, linear %g, native %g",
                      ist_coll_names[id], b, linear, c.c[0].time_us);
        }
}

/* path of a temporary file holding text */
static void temp_file(char *path, const char *text)
{
    strcpy(path, "/tmp/isthmus-tuning-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) failures++;
    if (fd >= 0) close(fd);
}

static void tuning(void)
{
    char path[64], err[512];
    struct ist_tuning t;
    temp_file(path, "# comment\nisthmus-coll-tuning 1\nplatform two-clusters\nmpi mpich\n"
                    "wait sleep\nranks 4 clusters 2\nsource bench coll\n"
                    "rule alltoall 0 181 ours 100 200   # small blocks\n"
                    "rule alltoall 182 4096 native 300 200\n"
                    "rule alltoallw 0 4096 native 900 800\n");
    CHECK(ist_tuning_read(path, &t, err, sizeof err) == 0, "read: %s", err);
    unlink(path);
    const struct ist_tuning_rule *r;
    const struct ist_mpi mpich = {IST_MPI_MPICH, 1}, spinning = {IST_MPI_MPICH, 0},
                         openmpi = {IST_MPI_OPENMPI, 1};
    r = ist_tuning_find(&t, mpich, 4, 2, IST_COLL_ALLTOALL, 64);
    CHECK(r && r->ours && r->ours_us == 100, "64 B: the first rule");
    r = ist_tuning_find(&t, mpich, 4, 2, IST_COLL_ALLTOALLV, 1 << 20);
    CHECK(r && !r->ours && r->from == 182,
          "alltoallv, no rule of its own, beyond the range: alltoall's nearest rule");
    r = ist_tuning_find(&t, mpich, 4, 2, IST_COLL_ALLTOALLW, 64);
    CHECK(r && !r->ours && r->ours_us == 900, "alltoallw: its own rule before alltoall's");
    CHECK(!ist_tuning_find(&t, openmpi, 4, 2, IST_COLL_ALLTOALL, 64), "another MPI");
    CHECK(!ist_tuning_find(&t, spinning, 4, 2, IST_COLL_ALLTOALL, 64), "another waiting mode");
    CHECK(!ist_tuning_find(&t, mpich, 8, 4, IST_COLL_ALLTOALL, 64), "another shape");
    CHECK(!ist_tuning_find(&t, mpich, 4, 2, IST_COLL_BCAST, 64), "no bcast rule");
    ist_tuning_free(&t);

    static const struct {
        const char *text, *error;
    } bad[] = {
        {"isthmus-plogp 1\n", ":1: not a tuning file"},
        {"isthmus-coll-tuning 1\nmpi lam\n", ":2: expected 'mpi openmpi' or 'mpi mpich'"},
        {"isthmus-coll-tuning 1\nmpi mpich\nwait no\n", ":3: expected 'wait sleep' or 'wait spin'"},
        {"isthmus-coll-tuning 1\nmpi mpich\nranks 4 clusters 2\nrule allfoo 0 8 ours 1 2\n",
         ":4: expected 'rule COLLECTIVE"},
        {"isthmus-coll-tuning 1\nmpi mpich\nranks 4 clusters 2\nrule bcast 9 8 ours 1 2\n",
         ":4: expected 'rule COLLECTIVE"},
        {"isthmus-coll-tuning 1\nmpi mpich\nranks 4 clusters 2\n", "lacks its 'mpi', 'wait'"},
        {"", "empty"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        temp_file(path, bad[i].text);
        err[0] = '\0';
        CHECK(ist_tuning_read(path, &t, err, sizeof err) == -1 && strstr(err, bad[i].error) &&
                  strstr(err, path),
              "bad file %zu: '%s'", i, err);
        unlink(path);
    }
    CHECK(ist_tuning_read("/nonexistent/tuning", &t, err, sizeof err) == -1, "missing file");
}

/* The selector costs a rooted collective's MPI's own as the mean over the roots: on two
 * clusters of 4 (block), a binomial Bcast from root 0 crosses the wide area once on its
 * path to every rank, from root 1 on some paths twice. */
static void every_root(void)
{
    struct ist_plogp far = {0};
    set_class(&far.lan, 50, 0.001);
    set_class(&far.wan, 10000, 0.01);
    int cluster[8] = {0, 0, 0, 0, 1, 1, 1, 1}, host[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    struct ist_layout from0 = {8, 2, cluster, host, 0}, any = {8, 2, cluster, host, 1};
    struct ist_mpi mpich = {IST_MPI_MPICH, 0};
    struct ist_choice a, b;
    ist_coll_choose(IST_COLL_BCAST, 8, mpich, &far, &from0, &a);
    ist_coll_choose(IST_COLL_BCAST, 8, mpich, &far, &any, &b);
    CHECK(b.c[0].time_us > 1.2 * a.c[0].time_us, "Bcast over every root %.0f us, root 0 %.0f us",
          b.c[0].time_us, a.c[0].time_us);
    ist_coll_choose(IST_COLL_ALLREDUCE, 8, mpich, &far, &from0, &a);
    ist_coll_choose(IST_COLL_ALLREDUCE, 8, mpich, &far, &any, &b);
    CHECK(b.c[0].time_us == a.c[0].time_us, "Allreduce has no root: %.0f against %.0f us",
          b.c[0].time_us, a.c[0].time_us);
}

int main(void)
{
    algorithms();
    costs();
    choices();
    every_root();
    tuning();
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("schedules: all checks passed\n");
    return failures != 0;
}
