/* Between the engine (zip_engine.c) and the world's set-up (zip_world.c). */
#ifndef ISTHMUS_ZIP_ENGINE_H
#define ISTHMUS_ZIP_ENGINE_H

#include <stdint.h>

struct ist_zip_world {
    int world_rank, world_size;
    int site;         /* this job's site */
    int *site_of;     /* world rank -> site */
    int *local_of;    /* world rank -> its rank in its site's job */
};
extern struct ist_zip_world ist_zip;

struct forwarder_address {
    int fd;         /* connected, non-blocking */
    char text[64];  /* ADDRESS:PORT, for messages */
};

void ist_zip_engine_start(struct forwarder_address *addrs, int n);
void ist_zip_engine_send_raw(int forwarder, uint32_t kind);
int ist_zip_engine_flushed(void);
int ist_zip_engine_forwarders(void);
int ist_zip_engine_fd(int forwarder);
/* Print "isthmus: rank R: MESSAGE" and end the whole run. */
void ist_zip_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
