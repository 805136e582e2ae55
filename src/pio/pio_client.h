/* What pio's client files share (pio_client.c: set-up, waits, files; pio_transfer.c:
 * writes and reads). Not part of pio's interface (pio.h). */
#ifndef ISTHMUS_PIO_CLIENT_H
#define ISTHMUS_PIO_CLIENT_H

#include <mpi.h>

#include "pio_layout.h"
#include "pio_protocol.h"

struct pio_file {
    pio_ctx *ctx;
    MPI_Comm comm; /* the clients that opened it (a duplicate): its collective calls' */
    int rank;      /* this client's rank in comm */
    int id, flags; /* id: (opener's client index << 20) + that client's count of opens */
    char name[256];
    struct pio_layout layout;
    struct pio_view view;
    struct pio_typemap filetype; /* when it has blocks, the view is it, tiled from disp */
    int64_t disp;
    int64_t known_size; /* at least the file's size: at open, after own writes, at the last stat */
    MPI_Comm cluster;   /* two-phase: comm's clients in this one's cluster (made at first use) */
};

/* Writes planned extents (per server) of data, scheduled by the client's strategy; reads
 * them into buf, scheduled by the servers'. */
int pio_write_planned(struct pio_file *f, const struct pio_extents *lists, const char *data);
int pio_read_planned(struct pio_file *f, const struct pio_extents *lists, char *buf);
/* pio_two_phase.c: a collective write by aggregators, or PIO_DIRECT when the clients'
 * requests are better sent each by itself (then nothing has been sent). rc: this
 * client's check of its request (any client's error ends the call on all). */
#define PIO_DIRECT 2
int pio_two_phase_write(struct pio_file *f, int rc, int64_t pos, const void *buf, int64_t len);
int pio_two_phase_read(struct pio_file *f, int rc, int64_t pos, void *buf, int64_t len);

/* Every rank's rc agreed on comm: the lowest, with its rank's message. */
int pio_agree(MPI_Comm comm, int rc);
/* Cancel and free n requests a failed wait leaves. */
void pio_abandon(MPI_Request *r, int n);
/* Wait for any of n requests to servers who[i], within the client's deadline. */
int pio_wait_any(const struct pio_ctx *c, int n, MPI_Request *r, const int *who, int *index, MPI_Status *st);
/* A file name pio accepts: PIO_OK, or PIO_EINVAL with the reason. */
int pio_check_name(const char *name);
/* Sends each listed server (listed NULL: all) one request and waits for every reply;
 * replies[i] is server i's (servers not listed are skipped). */
int pio_ask_servers(const struct pio_ctx *c, struct pio_msg req, const void *payload, int plen,
                    const int *listed, struct pio_msg *replies);
/* The error a server's reply carries, as pio's own. */
int pio_reply_error(const struct pio_ctx *c, const struct pio_msg *rep, int s, const char *what, const char *name);

#endif
