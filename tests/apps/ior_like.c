/* An IOR-like MPI-IO test: every rank writes, then reads back and checks, `segments`
 * segments of `block` bytes in transfers of `transfer` bytes, to one shared file or a
 * file per process, and prints one JSON line per phase (rank 0).
 *
 *   ior_like [-b BLOCK] [-t TRANSFER] [-s SEGMENTS] [-F] [-l segmented|strided] [-c] [-n]
 *            [-v] [-k] [-o PATH]
 *   -F  a file per process (PATH.RANK); else one shared file
 *   -l  shared file layout: segmented (a segment holds each rank's block in turn: IOR's)
 *       or strided (the ranks' transfers interleave, transfer by transfer)
 *   -c  collective calls (MPI_File_write_at_all...); else independent
 *   -n  nonblocking calls (MPI_File_iwrite_at..., waited one by one)
 *   -v  through a file view (a vector filetype, the individual file pointer) rather than
 *       explicit offsets
 *   -k  with -v: each call carries a whole block (block / transfer pieces of the view,
 *       noncontiguous in the file when strided), as a program writing its part of an
 *       array at once does; else one transfer per call
 * Every byte's value is a function of its file offset (and the file), so a read checks
 * what any rank wrote; the read phase reads another rank's part (the next rank's: IOR's
 * -C), so that nothing comes from a rank's own buffers. Exits 1 on a mismatch. */
#include <getopt.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct options {
    long long block, transfer, segments;
    int per_process, strided, collective, nonblocking, view, whole;
    const char *path;
};

static void die(const char *msg)
{
    fprintf(stderr, "ior_like: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static unsigned char byte_at(long long offset, int file)
{
    uint64_t x = (uint64_t)offset * 0x9E3779B97F4A7C15ull + (uint64_t)file * 0xBF58476D1CE4E5B9ull;
    return (unsigned char)(x >> 56);
}

/* The file offset of transfer i (0 <= i < block / transfer) of segment seg of rank r. */
static long long offset_of(const struct options *o, int nranks, int r, long long seg, long long i)
{
    if (o->per_process) return (seg * (o->block / o->transfer) + i) * o->transfer;
    if (o->strided) return ((seg * (o->block / o->transfer) + i) * nranks + r) * o->transfer;
    return (seg * nranks + r) * o->block + i * o->transfer;
}

static void one_transfer(MPI_File fh, int write, long long offset, unsigned char *buf, int count,
                         const struct options *o)
{
    MPI_Status st;
    MPI_Request req;
    int rc;
    if (o->view) { /* the view holds this rank's transfers in order: the file pointer walks it */
        if (o->nonblocking) rc = write ? MPI_File_iwrite(fh, buf, count, MPI_BYTE, &req)
                                       : MPI_File_iread(fh, buf, count, MPI_BYTE, &req);
        else if (o->collective) rc = write ? MPI_File_write_all(fh, buf, count, MPI_BYTE, &st)
                                           : MPI_File_read_all(fh, buf, count, MPI_BYTE, &st);
        else rc = write ? MPI_File_write(fh, buf, count, MPI_BYTE, &st)
                        : MPI_File_read(fh, buf, count, MPI_BYTE, &st);
    } else if (o->nonblocking) {
        if (o->collective) rc = write ? MPI_File_iwrite_at_all(fh, offset, buf, count, MPI_BYTE, &req)
                                      : MPI_File_iread_at_all(fh, offset, buf, count, MPI_BYTE, &req);
        else rc = write ? MPI_File_iwrite_at(fh, offset, buf, count, MPI_BYTE, &req)
                        : MPI_File_iread_at(fh, offset, buf, count, MPI_BYTE, &req);
    } else if (o->collective) {
        rc = write ? MPI_File_write_at_all(fh, offset, buf, count, MPI_BYTE, &st)
                   : MPI_File_read_at_all(fh, offset, buf, count, MPI_BYTE, &st);
    } else {
        rc = write ? MPI_File_write_at(fh, offset, buf, count, MPI_BYTE, &st)
                   : MPI_File_read_at(fh, offset, buf, count, MPI_BYTE, &st);
    }
    if (rc == MPI_SUCCESS && o->nonblocking) rc = MPI_Wait(&req, &st);
    if (rc != MPI_SUCCESS) die(write ? "a write failed" : "a read failed");
}

/* One phase: rank `as` 's part of the file(s), written or read and checked. */
static long long phase(const struct options *o, int write, int as, int nranks, double *seconds)
{
    char name[4096];
    if (o->per_process) snprintf(name, sizeof name, "%s.%d", o->path, as);
    else snprintf(name, sizeof name, "%s", o->path);
    MPI_Comm comm = o->per_process ? MPI_COMM_SELF : MPI_COMM_WORLD;
    MPI_File fh;
    int amode = write ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY;
    if (MPI_File_open(comm, name, amode, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
        die("cannot open the file (does its directory exist?)");
    MPI_Datatype filetype = MPI_DATATYPE_NULL;
    if (o->view) { /* this rank's part as a vector: its blocks, or every nranks-th transfer */
        long long per = o->block / o->transfer;
        if (o->per_process) MPI_Type_contiguous((int)o->transfer, MPI_BYTE, &filetype);
        else if (o->strided)
            MPI_Type_vector((int)(o->segments * per), (int)o->transfer,
                            (int)(o->transfer * nranks), MPI_BYTE, &filetype);
        else
            MPI_Type_vector((int)o->segments, (int)o->block, (int)(o->block * nranks), MPI_BYTE,
                            &filetype);
        MPI_Type_commit(&filetype);
        MPI_File_set_view(fh, offset_of(o, nranks, as, 0, 0), MPI_BYTE, filetype, "native",
                          MPI_INFO_NULL);
    }
    long long per_call = o->whole ? o->block / o->transfer : 1; /* transfers in one call */
    unsigned char *buf = malloc((size_t)(o->transfer * per_call));
    long long bad = 0;
    int file = o->per_process ? as : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long long seg = 0; seg < o->segments; seg++)
        for (long long i = 0; i < o->block / o->transfer; i += per_call) {
            for (long long j = 0; write && j < per_call; j++) {
                long long off = offset_of(o, nranks, as, seg, i + j);
                for (long long k = 0; k < o->transfer; k++) buf[j * o->transfer + k] = byte_at(off + k, file);
            }
            if (!write) memset(buf, 0, (size_t)(o->transfer * per_call));
            one_transfer(fh, write, offset_of(o, nranks, as, seg, i), buf, (int)(o->transfer * per_call), o);
            for (long long j = 0; !write && j < per_call; j++) {
                long long off = offset_of(o, nranks, as, seg, i + j);
                for (long long k = 0; k < o->transfer; k++) bad += buf[j * o->transfer + k] != byte_at(off + k, file);
            }
        }
    if (write) MPI_File_sync(fh);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    *seconds = MPI_Wtime() - t0;
    if (filetype != MPI_DATATYPE_NULL) MPI_Type_free(&filetype);
    free(buf);
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    struct options o = {65536, 16384, 2, 0, 0, 0, 0, 0, 0, "ior_like.dat"};
    for (int c; (c = getopt(argc, argv, "b:t:s:Fl:cnvko:")) != -1;) {
        switch (c) {
        case 'b': o.block = atoll(optarg); break;
        case 't': o.transfer = atoll(optarg); break;
        case 's': o.segments = atoll(optarg); break;
        case 'F': o.per_process = 1; break;
        case 'l':
            if (strcmp(optarg, "segmented") != 0 && strcmp(optarg, "strided") != 0)
                die("-l: expected segmented or strided");
            o.strided = strcmp(optarg, "strided") == 0;
            break;
        case 'c': o.collective = 1; break;
        case 'n': o.nonblocking = 1; break;
        case 'v': o.view = 1; break;
        case 'k': o.whole = 1; break;
        case 'o': o.path = optarg; break;
        default: die("usage: ior_like [-b BLOCK] [-t TRANSFER] [-s SEGMENTS] [-F] [-l LAYOUT] [-c] [-n] [-v] [-k] [-o PATH]");
        }
    }
    if (o.block <= 0 || o.transfer <= 0 || o.segments <= 0 || o.block % o.transfer)
        die("expected positive sizes, with the block a multiple of the transfer");
    if (o.view && o.nonblocking && o.collective) die("-v with -n: independent only");
    if (o.whole && !o.view) die("-k needs -v: a whole block in one call goes through the view");
    long long bad = 0, all_bad = 0;
    for (int write = 1; write >= 0; write--) {
        double seconds = 0;
        int as = write ? rank : (rank + 1) % nranks; /* read the next rank's part */
        bad += phase(&o, write, as, nranks, &seconds);
        long long bytes = o.block * o.segments * nranks;
        if (rank == 0)
            printf("{\"record\": \"ior\", \"op\": \"%s\", \"ranks\": %d, \"bytes\": %lld, "
                   "\"seconds\": %.6f, \"MiB_per_s\": %.3f}\n",
                   write ? "write" : "read", nranks, bytes, seconds,
                   (double)bytes / (1 << 20) / seconds);
    }
    MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("{\"record\": \"check\", \"bad_bytes\": %lld}\n", all_bad);
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
