/* The server side of pio (pio_server.c). */
#ifndef ISTHMUS_PIO_SERVER_H
#define ISTHMUS_PIO_SERVER_H

#include "pio_protocol.h"

/* The server's loop (pio_server.c): returns when the clients shut it down. */
int pio_serve(struct pio_ctx *c);

#endif
