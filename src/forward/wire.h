/* The wire format between ranks and forwarders (docs/zipper.md).
 *
 * Every byte on a forwarder connection is a frame: this 16-byte header, then `len`
 * payload bytes. A forwarder reads only the header: it relays DATA frames to the
 * connection of rank `dst`, unchanged and in the order they came from each connection,
 * so the frames of one pair of ranks stay in order. Payloads are at most
 * IST_ZIP_FRAME_MAX bytes: a large message travels as many frames, which the forwarder
 * passes on while later ones are still arriving (it never holds a message whole).
 *
 * Both ends run on the same kind of machine (the layer packs with MPI_Pack, which is
 * homogeneous): integers are in host order. */
#ifndef ISTHMUS_ZIP_WIRE_H
#define ISTHMUS_ZIP_WIRE_H

#include <stdint.h>

#define IST_ZIP_FRAME_MAX (64 * 1024)
#define IST_ZIP_DEFAULT_PORT 7300

enum ist_zip_kind {
    IST_ZIP_HELLO = 1, /* rank -> forwarder: I am rank `src` of a world of `dst` ranks */
    IST_ZIP_READY = 2, /* forwarder -> rank: every rank has said hello */
    IST_ZIP_DATA = 3,  /* rank -> rank, relayed */
    IST_ZIP_BYE = 4,   /* rank -> forwarder: in MPI_Finalize, nothing more will come */
    IST_ZIP_BULK = 5,  /* rank -> rank, relayed: a slice of a rendezvous's data (below) */
};

struct ist_zip_frame {
    uint32_t kind;
    uint32_t src; /* world rank of the sender */
    uint32_t dst; /* world rank of the receiver */
    uint32_t len; /* payload bytes that follow */
};

/* The start of a BULK frame's payload: the slice's place in its rendezvous. Bulk frames
 * say where their bytes go, so they need no order: the slices of one message may take
 * different forwarders (striping) and pass the pair's control messages. */
struct ist_zip_bulk {
    uint32_t id;     /* the rendezvous, as its RTS and CTS named it */
    uint32_t pad;
    uint64_t offset; /* of the slice in the message's data */
};

#endif
