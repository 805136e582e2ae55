/* A bounded random stress of point-to-point semantics, for zipper forwarding (issue 43):
 * synchronous, buffered, standard and nonblocking sends of every size class met by
 * probes, matched probes and receives with MPI_ANY_SOURCE / MPI_ANY_TAG, and cancelled
 * receives, mixed at random so that same-site and forwarded messages meet the same
 * wildcard in every order.
 *
 *   zip_stress SECONDS [SEED]
 *
 * Every rank draws the same plan from SEED (printed by rank 0, so a failure replays with
 * the same seed), one round after another, until rank 0 has seen SECONDS pass. Each
 * message carries its source, round and sequence number; the receiver checks them against
 * the status and that messages from one source arrive in the order they were sent (MPI's
 * non-overtaking rule: every receive here matches any tag). A failed check exits 1
 * naming it; a hang is the caller's timeout's to catch. Each rank ends with one line
 * "zip_stress rank R: ok, N rounds, M messages". */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define CHECK(cond, ...)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "zip_stress rank %d: line %d: ", rank, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                              \
            fputc('\n', stderr);                                                       \
            MPI_Abort(MPI_COMM_WORLD, 1);                                              \
        }                                                                              \
    } while (0)

/* Every rank draws the same numbers: the plan is the same everywhere. */
static uint64_t plan_state;
static unsigned draw(unsigned n)
{
    plan_state ^= plan_state << 13;
    plan_state ^= plan_state >> 7;
    plan_state ^= plan_state << 17;
    return (unsigned)(plan_state % n);
}

/* Sizes in ints: empty, small, near the layer's eager limit (64 KiB), rendezvous. */
static const int SIZES[] = {0, 1, 100, 16383, 16385, 70000};
#define NSIZES (int)(sizeof SIZES / sizeof *SIZES)
#define HEADER 3 /* source, round, sequence; a message shorter than that carries none */
#define MAXINTS 70000

enum send_mode { SEND, SSEND, BSEND, ISEND, ISSEND, ISSEND_TEST, NSEND_MODES };
enum recv_mode { PROBE_RECV, IPROBE_RECV, MPROBE, IMPROBE, RECV_ANY, IRECV_ANY, NRECV_MODES };
static const char *RECV_NAMES[] = {"Probe+Recv", "Iprobe+Recv", "Mprobe+Mrecv", "Improbe+Imrecv",
                                   "Recv(ANY)", "Irecv(ANY)+cancelled"};

static long messages;
static MPI_Comm exchange_comm; /* a duplicate: gather and exchange rounds never match */
/* Per communicator: this rank's last sequence number sent, and per source the last
 * received (non-overtaking holds per communicator). */
static int sent_seq[2], *last_seq[2];

static void send_one(int dest, int tag, int round, int ints, enum send_mode mode, int *buf)
{
    if (ints >= HEADER) buf[0] = rank, buf[1] = round, buf[2] = ++sent_seq[0];
    MPI_Request req;
    int done = 0;
    switch (mode) {
    case SEND: MPI_Send(buf, ints, MPI_INT, dest, tag, MPI_COMM_WORLD); break;
    case SSEND: MPI_Ssend(buf, ints, MPI_INT, dest, tag, MPI_COMM_WORLD); break;
    case BSEND: MPI_Bsend(buf, ints, MPI_INT, dest, tag, MPI_COMM_WORLD); break;
    case ISEND:
        MPI_Isend(buf, ints, MPI_INT, dest, tag, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case ISSEND:
        MPI_Issend(buf, ints, MPI_INT, dest, tag, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    default:
        MPI_Issend(buf, ints, MPI_INT, dest, tag, MPI_COMM_WORLD, &req);
        while (!done) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        break;
    }
}

/* Check a received message against its status and the order of its source's messages.
 * Rounds do not overlap (each ends in an MPI_Allreduce), so it is this round's. */
static void received(const MPI_Status *st, const int *buf, int round, int on, enum recv_mode how)
{
    int n;
    MPI_Get_count(st, MPI_INT, &n);
    CHECK(st->MPI_SOURCE >= 0 && st->MPI_SOURCE < size && st->MPI_SOURCE != rank,
          "%s: source %d", RECV_NAMES[how], st->MPI_SOURCE);
    CHECK(st->MPI_TAG >= 0 && st->MPI_TAG < 4, "%s: tag %d", RECV_NAMES[how], st->MPI_TAG);
    if (n >= HEADER) {
        CHECK(buf[0] == st->MPI_SOURCE && buf[1] == round,
              "%s: status says source %d in round %d, the message %d in round %d", RECV_NAMES[how],
              st->MPI_SOURCE, round, buf[0], buf[1]);
        CHECK(buf[2] > last_seq[on][buf[0]], "%s: from %d, message %d after %d (overtaken)",
              RECV_NAMES[how], buf[0], buf[2], last_seq[on][buf[0]]);
        last_seq[on][buf[0]] = buf[2];
    }
    messages++;
}

static void receive_one(int round, enum recv_mode how, int *buf)
{
    MPI_Status st;
    MPI_Message msg;
    MPI_Request req, never;
    int flag = 0;
    switch (how) {
    case PROBE_RECV:
    case IPROBE_RECV:
        if (how == PROBE_RECV) MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        else
            while (!flag) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        int source = st.MPI_SOURCE, tag = st.MPI_TAG, probed;
        MPI_Get_count(&st, MPI_INT, &probed);
        MPI_Recv(buf, MAXINTS, MPI_INT, source, tag, MPI_COMM_WORLD, &st);
        int got;
        MPI_Get_count(&st, MPI_INT, &got);
        /* From that source with that tag, the probed message is the next one. */
        CHECK(got == probed && st.MPI_SOURCE == source, "%s: probed %d ints from %d, received %d from %d",
              RECV_NAMES[how], probed, source, got, st.MPI_SOURCE);
        break;
    case MPROBE:
        MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st);
        MPI_Mrecv(buf, MAXINTS, MPI_INT, &msg, &st);
        break;
    case IMPROBE:
        while (!flag) MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
        MPI_Imrecv(buf, MAXINTS, MPI_INT, &msg, &req);
        MPI_Wait(&req, &st);
        break;
    case RECV_ANY: MPI_Recv(buf, MAXINTS, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st); break;
    default:
        /* A receive nobody sends to, posted first and cancelled: it must take nothing. */
        MPI_Irecv(buf + MAXINTS, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &never);
        MPI_Irecv(buf, MAXINTS, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
        MPI_Cancel(&never);
        MPI_Status cst;
        MPI_Wait(&never, &cst);
        MPI_Test_cancelled(&cst, &flag);
        CHECK(flag, "a receive on tag 99 was not cancelled");
        MPI_Wait(&req, &st);
        break;
    }
    received(&st, buf, round, 0, how);
}

/* One round: every rank but the root sends it 1-3 messages, each in a mode and a size
 * drawn from the plan; the root receives them all, each in a way drawn from the plan. */
static void gather_round(int round, int *buf)
{
    int root = (int)draw((unsigned)size);
    int per[64], total = 0;
    for (int r = 0; r < size; r++) total += per[r] = r == root ? 0 : 1 + (int)draw(3);
    for (int r = 0; r < size; r++)
        for (int k = 0; k < per[r]; k++) {
            int ints = SIZES[draw(NSIZES)];
            enum send_mode mode = (enum send_mode)draw(NSEND_MODES);
            int tag = (int)draw(4);
            if (r == rank) send_one(root, tag, round, ints, mode, buf);
        }
    for (int i = 0; i < total; i++) {
        enum recv_mode how = (enum recv_mode)draw(NRECV_MODES);
        if (rank == root) receive_one(round, how, buf);
    }
}

/* One round: everyone sends everyone one message (nonblocking, standard or synchronous)
 * while receiving from MPI_ANY_SOURCE. */
static void exchange_round(int round, int *buf, int *out)
{
    int ints = SIZES[draw(NSIZES)];
    int sync = (int)draw(2);
    MPI_Request req[64] = {MPI_REQUEST_NULL};
    int n = 0;
    for (int peer = 0; peer < size; peer++) {
        if (peer == rank) continue;
        int *slot = out + (size_t)n * MAXINTS;
        if (ints >= HEADER) slot[0] = rank, slot[1] = round, slot[2] = ++sent_seq[1];
        if (sync) MPI_Issend(slot, ints, MPI_INT, peer, 0, exchange_comm, &req[n++]);
        else MPI_Isend(slot, ints, MPI_INT, peer, 0, exchange_comm, &req[n++]);
    }
    for (int i = 0; i < size - 1; i++) {
        MPI_Status st;
        MPI_Recv(buf, MAXINTS, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, exchange_comm, &st);
        received(&st, buf, round, 1, RECV_ANY);
    }
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || size > 64) {
        if (rank == 0) fprintf(stderr, "usage: zip_stress SECONDS [SEED], on at most 64 ranks\n");
        MPI_Finalize();
        return 2;
    }
    double seconds = atof(argv[1]);
    unsigned long seed = argc > 2 ? strtoul(argv[2], NULL, 10) : (unsigned long)MPI_Wtime() * 1000003ul;
    MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("zip_stress seed %lu\n", seed), fflush(stdout);
    plan_state = seed * 2654435761u + 1;
    int *buf = malloc(sizeof(int) * (MAXINTS + 1));
    int *out = malloc(sizeof(int) * (size_t)MAXINTS * (size_t)size);
    int bsize = (MAXINTS * (int)sizeof(int) + MPI_BSEND_OVERHEAD) * 16;
    char *attached = malloc((size_t)bsize);
    last_seq[0] = calloc((size_t)size, sizeof(int));
    last_seq[1] = calloc((size_t)size, sizeof(int));
    MPI_Comm_dup(MPI_COMM_WORLD, &exchange_comm);
    memset(buf, 0, sizeof(int) * (MAXINTS + 1));
    MPI_Buffer_attach(attached, bsize);
    double start = MPI_Wtime();
    int round = 0, go = 1;
    while (go) {
        round++;
        if (draw(3) == 0) exchange_round(round, buf, out);
        else gather_round(round, buf);
        if (draw(4) == 0) MPI_Barrier(MPI_COMM_WORLD);
        /* Rank 0's clock decides; the reduction also ends the round everywhere. */
        int mine = rank != 0 || MPI_Wtime() - start < seconds;
        MPI_Allreduce(&mine, &go, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    }
    MPI_Buffer_detach(&attached, &bsize);
    printf("zip_stress rank %d: ok, %d rounds, %ld messages\n", rank, round, messages);
    free(attached);
    free(out);
    free(buf);
    free(last_seq[0]);
    free(last_seq[1]);
    MPI_Comm_free(&exchange_comm);
    MPI_Finalize();
    return 0;
}
