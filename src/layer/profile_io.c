/* The MPI-IO profile, per file as Darshan's MPI-IO module keeps it: for every file a rank
 * opened, the calls of each MPI_File_* function on it (calls, bytes, time) and the access
 * sizes of its reads and writes in power-of-two buckets. Whether a call was collective,
 * independent, nonblocking or split is in its name; isthmus profile show reads it there.
 *
 * A file is its name as the rank passed it to MPI_File_open: opening it again adds to the
 * same record. Handles are mapped to files while open. Files beyond IST_IO_FILES on a rank
 * are only counted (dropped); their calls still count in the per-function table. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"
#include "profiler.h"

#define IST_IO_FILES 64
#define IST_IO_OPEN 64
#define IST_IO_NAME 256
#define IST_IO_BUCKETS 40 /* up to 2^39 bytes per access */

struct fn_stats {
    uint64_t calls, bytes, ticks;
};

struct io_file {
    char name[IST_IO_NAME];
    struct fn_stats *fn; /* by io slot (slot_of) */
    uint64_t sizes[2][IST_IO_BUCKETS]; /* [0] reads, [1] writes */
};

static struct io_file files[IST_IO_FILES];
static int nfiles;
static uint64_t dropped;
static struct {
    MPI_File handle;
    int file;
} open_files[IST_IO_OPEN];

/* The io functions' slots in a file's table, from the function table's groups. */
static int slot_of[IST_FN_COUNT], nslots = -1;

static void find_slots(void)
{
    nslots = 0;
    for (int fn = 0; fn < IST_FN_COUNT; fn++)
        slot_of[fn] = strcmp(ist_fn_group[fn], "io") == 0 ? nslots++ : -1;
}

static int file_named(const char *name)
{
    for (int i = 0; i < nfiles; i++)
        if (strncmp(files[i].name, name, IST_IO_NAME - 1) == 0) return i;
    if (nfiles == IST_IO_FILES) return -1;
    struct fn_stats *fn = calloc((size_t)nslots, sizeof *fn);
    if (!fn) return -1;
    snprintf(files[nfiles].name, IST_IO_NAME, "%s", name);
    files[nfiles].fn = fn;
    return nfiles++;
}

static int file_of(MPI_File fh)
{
    for (int i = 0; i < IST_IO_OPEN; i++)
        if (open_files[i].handle == fh && fh != MPI_FILE_NULL) return open_files[i].file;
    return -1;
}

/* Counts the call in the function table and, when fh is a file this rank opened, in the
 * file's record (rw: 0 a read, 1 a write, -1 neither). */
static void record(enum ist_fn fn, uint64_t ticks, MPI_File fh, uint64_t bytes, int rw)
{
    ist_lock_stats();
    ist_add_call(fn, ticks, bytes);
    if (nslots < 0) find_slots();
    int f = file_of(fh);
    if (f >= 0 && slot_of[fn] >= 0) {
        struct fn_stats *s = &files[f].fn[slot_of[fn]];
        s->calls++;
        s->bytes += bytes;
        s->ticks += ticks;
        if (rw >= 0) {
            int b = ist_bucket_of(bytes);
            files[f].sizes[rw][b < IST_IO_BUCKETS ? b : IST_IO_BUCKETS - 1]++;
        }
    }
    ist_unlock_stats();
}

void ist_rec_io_open(enum ist_fn fn, uint64_t ticks, const char *filename, MPI_File *fh)
{
    ist_lock_stats();
    if (nslots < 0) find_slots();
    int f = file_named(filename), slot = -1;
    for (int i = 0; i < IST_IO_OPEN && slot < 0; i++)
        if (open_files[i].handle == MPI_FILE_NULL || open_files[i].handle == 0) slot = i;
    if (f < 0 || slot < 0) dropped++;
    else if (*fh != MPI_FILE_NULL) open_files[slot].handle = *fh, open_files[slot].file = f;
    ist_unlock_stats();
    record(fn, ticks, *fh, 0, -1);
}

void ist_rec_io_close(enum ist_fn fn, uint64_t ticks, MPI_File old_fh)
{
    record(fn, ticks, old_fh, 0, -1);
    ist_lock_stats();
    for (int i = 0; i < IST_IO_OPEN; i++)
        if (open_files[i].handle == old_fh) open_files[i].handle = MPI_FILE_NULL;
    ist_unlock_stats();
}

void ist_rec_io_meta(enum ist_fn fn, uint64_t ticks, MPI_File fh) { record(fn, ticks, fh, 0, -1); }

void ist_rec_io_read(enum ist_fn fn, uint64_t ticks, MPI_File fh, int count, MPI_Datatype type)
{
    record(fn, ticks, fh, ist_bytes_of(count, type), 0);
}

void ist_rec_io_write(enum ist_fn fn, uint64_t ticks, MPI_File fh, int count, MPI_Datatype type)
{
    record(fn, ticks, fh, ist_bytes_of(count, type), 1);
}

/* One (file, function) of one rank, and one nonzero access-size bucket, as sent to rank 0. */
struct io_call_row {
    char file[IST_IO_NAME];
    int32_t fn, pad;
    uint64_t calls, bytes;
    double seconds;
};

struct io_size_row {
    char file[IST_IO_NAME];
    int32_t write, bucket;
    uint64_t count;
};

void ist_io_gather(struct ist_io_gathered *g, MPI_Comm comm, double ticks_per_second)
{
    if (nslots < 0) find_slots();
    int ncalls = 0, nsizes = 0;
    for (int f = 0; f < nfiles; f++) {
        for (int s = 0; s < nslots; s++) ncalls += files[f].fn[s].calls != 0;
        for (int rw = 0; rw < 2; rw++)
            for (int b = 0; b < IST_IO_BUCKETS; b++) nsizes += files[f].sizes[rw][b] != 0;
    }
    struct io_call_row *calls = calloc((size_t)ncalls + 1, sizeof *calls);
    struct io_size_row *sizes = calloc((size_t)nsizes + 1, sizeof *sizes);
    int c = 0, z = 0;
    for (int f = 0; f < nfiles; f++) {
        for (int fn = 0; fn < IST_FN_COUNT; fn++) {
            const struct fn_stats *s = slot_of[fn] >= 0 ? &files[f].fn[slot_of[fn]] : NULL;
            if (!s || !s->calls) continue;
            memcpy(calls[c].file, files[f].name, IST_IO_NAME);
            calls[c].fn = fn;
            calls[c].calls = s->calls;
            calls[c].bytes = s->bytes;
            calls[c++].seconds = (double)s->ticks / ticks_per_second;
        }
        for (int rw = 0; rw < 2; rw++)
            for (int b = 0; b < IST_IO_BUCKETS; b++) {
                if (!files[f].sizes[rw][b]) continue;
                memcpy(sizes[z].file, files[f].name, IST_IO_NAME);
                sizes[z].write = rw;
                sizes[z].bucket = b;
                sizes[z++].count = files[f].sizes[rw][b];
            }
    }
    g->calls = ist_gather_rows(calls, ncalls, sizeof *calls, &g->call_counts, comm);
    g->sizes = ist_gather_rows(sizes, nsizes, sizeof *sizes, &g->size_counts, comm);
    g->dropped = 0;
    ist_sum_to_0(&dropped, &g->dropped, comm);
    free(calls);
    free(sizes);
}

void ist_io_write(FILE *f, const struct ist_io_gathered *g, int n)
{
    fprintf(f, "  \"io\": {\n    \"files_dropped\": %llu,\n    \"calls\": {\"columns\": [\"rank\", "
               "\"file\", \"function\", \"calls\", \"bytes\", \"seconds\"], \"rows\": [",
            (unsigned long long)g->dropped);
    const struct io_call_row *c = g->calls;
    for (int r = 0, k = 0; r < n; r++)
        for (int i = 0; i < g->call_counts[r]; i++, c++, k++) {
            fprintf(f, "%s\n      [%d, ", k ? "," : "", r);
            ist_json_string(f, c->file);
            fprintf(f, ", \"%s\", %llu, %llu, %.9f]", ist_fn_name[c->fn],
                    (unsigned long long)c->calls, (unsigned long long)c->bytes, c->seconds);
        }
    fputs("\n    ]},\n    \"access_sizes\": {\"columns\": [\"rank\", \"file\", \"op\", "
          "\"bucket_low\", \"count\"], \"rows\": [", f);
    const struct io_size_row *z = g->sizes;
    for (int r = 0, k = 0; r < n; r++)
        for (int i = 0; i < g->size_counts[r]; i++, z++, k++) {
            fprintf(f, "%s\n      [%d, ", k ? "," : "", r);
            ist_json_string(f, z->file);
            fprintf(f, ", \"%s\", %llu, %llu]", z->write ? "write" : "read",
                    (unsigned long long)ist_bucket_low(z->bucket),
                    (unsigned long long)z->count);
        }
    fputs("\n    ]}\n  },\n", f);
}

void ist_io_free(struct ist_io_gathered *g)
{
    free(g->calls);
    free(g->call_counts);
    free(g->sizes);
    free(g->size_counts);
    for (int f = 0; f < nfiles; f++) free(files[f].fn);
    nfiles = 0;
}
