/* isthmus-router: the emulated network's router, the software version of the first paper's
 * router PC. One process holds a TUN device ("ist0") in every emulated host's network
 * namespace and switches IPv4 packets between them. Each packet follows the path of links
 * the configuration gives for its (source host, destination host) pair, and every link
 * applies its model (link_model.h). Single-threaded: an epoll loop over the TUN devices,
 * a timerfd for the earliest pending packet, and a control socket.
 *
 *   isthmus-router CONFIG
 *
 * CONFIG is written by `isthmus net up` (python/isthmus/emulate/net.py), one item per line:
 *   control PATH                   Unix socket for commands, made with mode 0600
 *   dilation K                     run K times slower than real time (default 1; docs/dilation.md)
 *   sched nice|fifo                nice -10 (default), or SCHED_FIFO where allowed
 *   host ID NETNS 198.18.X.Y       ids from 0, in order
 *   link ID NAME key=value...      ids from 0; keys as link_set() takes them, plus seed=N
 *   route SRC DST L1,L2,...        the links from host SRC to host DST ('-': direct)
 * Pairs without a route line cannot reach each other (disjoint networks).
 *
 * Time dilation: every time the router works with (packet arrivals, due times, link
 * state) is virtual time, which runs K times slower than CLOCK_MONOTONIC from the
 * router's start. The link model is untouched: in virtual time each link is exactly what
 * the configuration says (latency, jitter, rate in virtual units, also for "set"), and in
 * real time every delay and serialization lasts K times longer. Only the timer and the
 * wake-before-due window (spin_ns) are real time: they are about this machine.
 *
 * Control commands, one line each, one reply: "stats" (JSON), "set LINK key=value...",
 * "ping", "shutdown". On SIGTERM or SIGINT it closes its devices and socket and exits;
 * the TUN devices vanish with it. It prints "ready" on stdout once every device exists. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "event_heap.h"
#include "link_model.h"
#include "router.h"

struct host hosts[MAX_HOSTS];
int nhosts;
struct link links[MAX_LINKS];
int nlinks;
static struct route *routes; /* nhosts x nhosts */
static int16_t host_by_addr[256][256];
char control_path[108];
struct event_heap heap;
volatile sig_atomic_t stopping;
uint64_t start_ns, non_ipv4;
/* How late packets reach their destination device after their due time: the router's own
 * contribution to delay errors. */
uint64_t late_count, late_sum_ns, late_max_ns;
/* A timed sleep on a virtual machine wakes up 100-300 us late, which alone would miss the
 * RTT target: the loop sleeps until spin_ns before the next packet is due and polls from
 * there (config "spin_ns N"; 0 to always sleep). */
static uint64_t spin_ns = 200000;
#define ROUTER_NICE (-10)
#define ROUTER_FIFO_PRIORITY 10
double dilation = 1.0;
static int sched_fifo = 0;
static uint64_t epoch_ns; /* real time at which virtual time equals real time */

static uint64_t real_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Virtual time: real time from the epoch, divided by the dilation factor. */
uint64_t now_ns(void)
{
    uint64_t real = real_now_ns();
    if (dilation == 1.0) return real;
    return epoch_ns + (uint64_t)((double)(real - epoch_ns) / dilation);
}

static uint64_t real_of(uint64_t virtual_ns)
{
    if (dilation == 1.0) return virtual_ns;
    return epoch_ns + (uint64_t)((double)(virtual_ns - epoch_ns) * dilation);
}

void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "isthmus-router: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(1);
}

/* ---- configuration ------------------------------------------------------------------ */

static struct route *route_of(int src, int dst) { return &routes[(size_t)src * (size_t)nhosts + (size_t)dst]; }

static void parse_link(char *rest, int lineno)
{
    char *save = NULL, *id = strtok_r(rest, " \t", &save), *name = strtok_r(NULL, " \t", &save);
    if (!id || !name || atoi(id) != nlinks || nlinks >= MAX_LINKS) die("bad link line %s", "");
    struct link_params p = {.dist = JITTER_UNIFORM, .queue_bytes = 1 << 20, .loss_burst = 1.0};
    uint64_t seed = (uint64_t)nlinks + 1;
    for (char *kv = strtok_r(NULL, " \t", &save); kv; kv = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) die("link option without '=': %s", kv);
        *eq = '\0';
        if (strcmp(kv, "seed") == 0) seed = strtoull(eq + 1, NULL, 10);
        else if (link_set(&p, kv, eq + 1) != 0) die("bad link option: %s", kv);
    }
    (void)lineno;
    link_init(&links[nlinks++], name, &p, seed);
}

static void parse_config(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) die("cannot read %s", path);
    char line[4096];
    int lineno = 0;
    memset(host_by_addr, 0xff, sizeof host_by_addr);
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0') continue;
        char *save = NULL, *kind = strtok_r(line, " \t", &save), *rest = save;
        if (strcmp(kind, "spin_ns") == 0) {
            spin_ns = strtoull(strtok_r(NULL, " \t", &save), NULL, 10);
        } else if (strcmp(kind, "dilation") == 0) {
            char *v = strtok_r(NULL, " \t", &save), *end = NULL;
            dilation = v ? strtod(v, &end) : 0;
            if (!v || *end || !(dilation >= 1.0 && dilation <= 1000.0)) die("bad dilation: %s", v ? v : "");
        } else if (strcmp(kind, "sched") == 0) {
            char *v = strtok_r(NULL, " \t", &save);
            if (!v || (strcmp(v, "fifo") != 0 && strcmp(v, "nice") != 0)) die("bad sched (fifo or nice): %s", v ? v : "");
            sched_fifo = strcmp(v, "fifo") == 0;
        } else if (strcmp(kind, "control") == 0) {
            snprintf(control_path, sizeof control_path, "%s", strtok_r(NULL, " \t", &save));
        } else if (strcmp(kind, "host") == 0) {
            char *id = strtok_r(NULL, " \t", &save), *ns = strtok_r(NULL, " \t", &save);
            char *addr = strtok_r(NULL, " \t", &save);
            unsigned a, b, c, d;
            if (!id || !ns || !addr || atoi(id) != nhosts || nhosts >= MAX_HOSTS ||
                sscanf(addr, "%u.%u.%u.%u", &a, &b, &c, &d) != 4 || a != 198 || b != 18 || c > 255 || d > 255)
                die("bad host line: %s", id ? id : "");
            struct host *h = &hosts[nhosts];
            snprintf(h->netns, sizeof h->netns, "%s", ns);
            h->addr[0] = 198, h->addr[1] = 18, h->addr[2] = (uint8_t)c, h->addr[3] = (uint8_t)d;
            h->fd = -1;
            host_by_addr[c][d] = (int16_t)nhosts++;
        } else if (strcmp(kind, "link") == 0) {
            parse_link(rest, lineno);
        } else if (strcmp(kind, "route") == 0) {
            if (!routes) {
                routes = calloc((size_t)nhosts * (size_t)nhosts, sizeof *routes);
                for (int i = 0; i < nhosts * nhosts; i++) routes[i].nhops = -1;
            }
            char *src = strtok_r(NULL, " \t", &save), *dst = strtok_r(NULL, " \t", &save);
            char *list = strtok_r(NULL, " \t", &save);
            if (!src || !dst || !list) die("bad route line %s", "");
            int s = atoi(src), t = atoi(dst);
            if (s < 0 || s >= nhosts || t < 0 || t >= nhosts) die("route names an unknown host: %s", src);
            struct route *r = route_of(s, t);
            r->nhops = 0;
            if (strcmp(list, "-") != 0) {
                char *save2 = NULL;
                for (char *l = strtok_r(list, ",", &save2); l; l = strtok_r(NULL, ",", &save2)) {
                    int id = atoi(l);
                    if (id < 0 || id >= nlinks || r->nhops >= MAX_HOPS) die("bad route hop: %s", l);
                    r->hops[r->nhops++] = (uint16_t)id;
                }
            }
        } else {
            die("unknown configuration line: %s", kind);
        }
    }
    fclose(f);
    if (!nhosts || !control_path[0]) die("configuration %s has no hosts or no control socket", path);
    if (!routes) {
        routes = calloc((size_t)nhosts * (size_t)nhosts, sizeof *routes);
        for (int i = 0; i < nhosts * nhosts; i++) routes[i].nhops = -1;
    }
}

/* ---- devices ------------------------------------------------------------------------ */

static void open_tun(struct host *h, int home_ns)
{
    char path[sizeof h->netns + 32];
    snprintf(path, sizeof path, "/var/run/netns/%.127s", h->netns);
    int nsfd = open(path, O_RDONLY | O_CLOEXEC);
    if (nsfd < 0) die("no network namespace %s", h->netns);
    if (setns(nsfd, CLONE_NEWNET) != 0) die("cannot enter namespace %s (root needed)", h->netns);
    close(nsfd);
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) die("cannot open /dev/net/tun: %s", strerror(errno));
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "ist0");
    if (ioctl(fd, TUNSETIFF, &ifr) != 0) die("cannot create the TUN device: %s", strerror(errno));
    h->fd = fd;
    if (setns(home_ns, CLONE_NEWNET) != 0) die("cannot return to the router's namespace%s", "");
}

/* ---- forwarding --------------------------------------------------------------------- */

static void deliver(struct packet *p)
{
    struct host *h = &hosts[p->dst];
    if (write(h->fd, p->data, p->len) == (ssize_t)p->len) {
        h->tx_packets++;
        h->tx_bytes += p->len;
    } else {
        h->tx_drops++;
    }
    free(p);
}

/* Move the packet through its links from hop p->hop, starting at time t (when it reached
 * that hop); it is freed, delivered, or queued for the time it reaches its next hop. */
static void advance(struct packet *p, uint64_t t, uint64_t now)
{
    const struct route *r = route_of(p->src, p->dst);
    while (p->hop < r->nhops) {
        uint64_t arrival;
        if (link_offer(&links[r->hops[p->hop]], t, p->len, &arrival) != LINK_PASS) {
            free(p);
            return;
        }
        p->hop++;
        if (arrival > now) {
            p->due = arrival;
            heap_push(&heap, p);
            return;
        }
        t = arrival;
    }
    deliver(p);
}

static void read_host(int src, uint64_t now)
{
    struct host *h = &hosts[src];
    for (int i = 0; i < READ_BATCH; i++) {
        struct packet *p = malloc(sizeof *p + MAX_PACKET);
        if (!p) return;
        ssize_t n = read(h->fd, p->data, MAX_PACKET);
        if (n <= 0) {
            free(p);
            return;
        }
        h->rx_packets++;
        h->rx_bytes += (uint64_t)n;
        int dst = -1;
        if (n >= 20 && (p->data[0] >> 4) == 4 && p->data[16] == 198 && p->data[17] == 18)
            dst = host_by_addr[p->data[18]][p->data[19]];
        else if (n < 20 || (p->data[0] >> 4) != 4)
            non_ipv4++;
        if (dst < 0 || route_of(src, dst)->nhops < 0) {
            h->unroutable++;
            free(p);
            continue;
        }
        struct packet *q = realloc(p, sizeof *p + (size_t)n); /* keep only what is needed */
        if (q) p = q;
        p->src = (uint16_t)src;
        p->dst = (uint16_t)dst;
        p->len = (uint32_t)n;
        p->hop = 0;
        advance(p, now, now);
    }
}

static void run_due(uint64_t now)
{
    while (heap.n && heap.items[0]->due <= now) {
        struct packet *p = heap_pop(&heap);
        uint64_t late = now - p->due;
        late_count++;
        late_sum_ns += late;
        if (late > late_max_ns) late_max_ns = late;
        advance(p, p->due, now);
    }
}

/* Arms the timer for the next due packet less the spin window; returns the epoll
 * timeout: 0 (poll) inside the window, -1 (sleep) outside it. */
static int arm_timer(int tfd)
{
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (heap.n) {
        uint64_t due = real_of(heap.items[0]->due);
        if (due <= real_now_ns() + spin_ns) return 0;
        due -= spin_ns;
        its.it_value.tv_sec = (time_t)(due / 1000000000ull);
        its.it_value.tv_nsec = (long)(due % 1000000000ull);
        if (!its.it_value.tv_sec && !its.it_value.tv_nsec) its.it_value.tv_nsec = 1;
    }
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
    return -1;
}

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: isthmus-router CONFIG\n");
        return 2;
    }
    parse_config(argv[1]);
    /* Timers fire when due, not up to 50 us later as the default slack allows. */
    prctl(PR_SET_TIMERSLACK, 1UL);
    /* The router is the wire: ranks and other load on the cores should not delay it (a
     * packet held past TCP's 200 ms retransmission timeout costs the flow a timeout and
     * its backoff; docs/net.md). Where not allowed (no CAP_SYS_NICE) it keeps its priority. */
    if (setpriority(PRIO_PROCESS, 0, ROUTER_NICE) != 0 && errno != EACCES && errno != EPERM)
        fprintf(stderr, "isthmus-router: cannot raise its priority: %s\n", strerror(errno));
    /* On request SCHED_FIFO, above every rank. Measured (results/net/README.md): the router
     * itself is on time either way (well under 1 us late on an idle machine), but under
     * SCHED_FIFO the endpoints' RTT error grows from about 15 us to 150-250 us, whatever
     * the spin window: nice -10 is the default. Where not allowed it stays at nice -10. */
    if (sched_fifo) {
        struct sched_param sp = {.sched_priority = ROUTER_FIFO_PRIORITY};
        if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) != 0) sched_fifo = 0;
    }
    int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    for (int i = 0; i < nhosts; i++) open_tun(&hosts[i], home);
    close(home);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    int ep = epoll_create1(EPOLL_CLOEXEC);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    int lfd = router_listen_control();
    struct epoll_event ev = {.events = EPOLLIN};
    for (int i = 0; i < nhosts; i++) {
        ev.data.u32 = (uint32_t)i;
        epoll_ctl(ep, EPOLL_CTL_ADD, hosts[i].fd, &ev);
    }
    ev.data.u32 = MAX_HOSTS;
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
    ev.data.u32 = MAX_HOSTS + 1;
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    heap_init(&heap);
    epoch_ns = real_now_ns();
    start_ns = now_ns();
    printf("ready\n");
    fflush(stdout);

    struct epoll_event events[64];
    int timeout = -1;
    while (!stopping) {
        int n = epoll_wait(ep, events, 64, timeout);
        if (n < 0 && errno != EINTR) break;
        uint64_t now = now_ns();
        for (int i = 0; i < n; i++) {
            uint32_t id = events[i].data.u32;
            if (id < MAX_HOSTS) read_host((int)id, now);
            else if (id == MAX_HOSTS) {
                uint64_t expirations;
                if (read(tfd, &expirations, sizeof expirations) < 0) { /* spurious */
                }
            } else router_serve_control(lfd);
        }
        run_due(now_ns());
        timeout = arm_timer(tfd);
    }
    unlink(control_path);
    for (int i = 0; i < nhosts; i++) close(hosts[i].fd);
    heap_free(&heap);
    free(routes);
    return 0;
}
