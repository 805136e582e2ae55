/* What the router's files share (router.c: configuration, devices, forwarding, the loop;
 * router_control.c: the control socket's commands). */
#ifndef ISTHMUS_ROUTER_H
#define ISTHMUS_ROUTER_H

#include <signal.h>
#include <stdint.h>

#include "event_heap.h"
#include "link_model.h"

#define MAX_HOSTS 1024
#define MAX_LINKS 8192
#define MAX_HOPS 8
#define MAX_PACKET 65536
#define READ_BATCH 64

struct route {
    int nhops; /* -1: no route */
    uint16_t hops[MAX_HOPS];
};

struct host {
    char netns[128];
    uint8_t addr[4];
    int fd;
    uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, unroutable, tx_drops;
};

extern struct host hosts[MAX_HOSTS];
extern int nhosts;
extern struct link links[MAX_LINKS];
extern int nlinks;
extern char control_path[108];
extern struct event_heap heap;
extern volatile sig_atomic_t stopping;
extern uint64_t start_ns, non_ipv4;
extern uint64_t late_count, late_sum_ns, late_max_ns; /* how late packets reach their device */
extern double dilation;

uint64_t now_ns(void); /* virtual time (router.c) */
void die(const char *fmt, const char *arg) __attribute__((noreturn));

/* The control socket (router_control.c): listen on control_path; serve one connection. */
int router_listen_control(void);
void router_serve_control(int lfd);

#endif
