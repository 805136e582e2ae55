/* isthmus-probe: measures the emulated network from inside its namespaces.
 *
 *   isthmus-probe serve [--port P] [--seconds S]     TCP echo and sink, UDP echo; exits after S s
 *   isthmus-probe rtt HOST [--udp] [--size B] [--count N] [--port P] [--timeout-ms T]
 *   isthmus-probe stream HOST [--seconds S] [--buffer BYTES] [--port P]
 *
 * rtt: N ping-pongs of B bytes (TCP_NODELAY, or UDP datagrams with a 1 s timeout each),
 *      after 10 unmeasured ones; prints JSON with min, median, p90 and mean in us, and the
 *      UDP losses (a datagram not back within T ms, default 1000, is lost).
 * stream: TCP bulk transfer for S seconds with send and receive buffers of BYTES (0: the
 *      kernel's autotuning); the server reports the bytes it received and the time between
 *      its first and last byte; prints JSON with goodput in bit/s.
 * Traffic goes only to HOST, an address of the emulated network. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t n)
{
    size_t put = 0;
    while (put < n) {
        ssize_t r = write(fd, (const char *)buf + put, n - put);
        if (r <= 0) return -1;
        put += (size_t)r;
    }
    return 0;
}

static void set_buffers(int fd, int bytes)
{
    if (bytes <= 0) return;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

/* ---- server ------------------------------------------------------------------------- */

/* A connection starts with a mode byte: 'E' echo until closed, 'S' sink (then reply with
 * the byte count and the seconds between first and last byte), with a 4-byte buffer size. */
static void serve_tcp_connection(int c)
{
    char mode;
    int32_t buffer = 0;
    if (read_full(c, &mode, 1) != 0 || read_full(c, &buffer, 4) != 0) return;
    set_buffers(c, buffer);
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    static char buf[1 << 20];
    if (mode == 'E') {
        ssize_t n;
        while ((n = read(c, buf, sizeof buf)) > 0)
            if (write_full(c, buf, (size_t)n) != 0) return;
    } else if (mode == 'S') {
        uint64_t total = 0;
        double first = 0, last = 0;
        ssize_t n;
        while ((n = read(c, buf, sizeof buf)) > 0) {
            last = now_s();
            if (!total) first = last;
            total += (uint64_t)n;
        }
        char reply[128];
        int len = snprintf(reply, sizeof reply, "%llu %.9f\n", (unsigned long long)total, last - first);
        write_full(c, reply, (size_t)len);
    }
}

static int serve(int port, double seconds)
{
    int t = socket(AF_INET, SOCK_STREAM, 0), u = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
    setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(t, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(t, 16) != 0 ||
        bind(u, (struct sockaddr *)&sa, sizeof sa) != 0) {
        perror("isthmus-probe serve: bind");
        return 1;
    }
    signal(SIGCHLD, SIG_IGN); /* connection handlers reap themselves */
    printf("serving\n");
    fflush(stdout);
    double end = now_s() + seconds;
    static char buf[65536];
    while (now_s() < end) {
        struct pollfd fds[2] = {{.fd = t, .events = POLLIN}, {.fd = u, .events = POLLIN}};
        if (poll(fds, 2, 200) <= 0) continue;
        if (fds[0].revents & POLLIN) {
            int c = accept(t, NULL, NULL);
            if (c >= 0) {
                if (fork() == 0) {
                    alarm((unsigned)seconds + 1); /* a handler never outlives the server by much */
                    close(t);
                    close(u);
                    serve_tcp_connection(c);
                    _exit(0);
                }
                close(c);
            }
        }
        if (fds[1].revents & POLLIN) {
            struct sockaddr_in from;
            socklen_t fl = sizeof from;
            ssize_t n = recvfrom(u, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
            if (n > 0) sendto(u, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
        }
    }
    return 0;
}

/* ---- clients ------------------------------------------------------------------------ */

static int connect_to(const char *host, int port, char mode, int buffer)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    set_buffers(fd, buffer);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr, "isthmus-probe: '%s' is not an IPv4 address\n", host);
        exit(2);
    }
    for (int attempt = 0; connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0; attempt++) {
        if (attempt == 50) {
            fprintf(stderr, "isthmus-probe: cannot connect to %s:%d: %s\n", host, port, strerror(errno));
            exit(1);
        }
        close(fd);
        usleep(100000); /* the server may still be starting */
        fd = socket(AF_INET, SOCK_STREAM, 0);
        set_buffers(fd, buffer);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    int32_t b = buffer;
    if (write_full(fd, &mode, 1) != 0 || write_full(fd, &b, 4) != 0) exit(1);
    return fd;
}

static int rtt(const char *host, int port, int udp, int size, int count, int timeout_ms)
{
    char *buf = calloc(1, (size_t)size);
    double *samples = calloc((size_t)count, sizeof(double));
    int fd, lost = 0, got = 0, run = 0, longest_run = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &sa.sin_addr);
    if (udp) {
        fd = socket(AF_INET, SOCK_DGRAM, 0);
        connect(fd, (struct sockaddr *)&sa, sizeof sa);
        struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    } else {
        fd = connect_to(host, port, 'E', 0);
    }
    for (int i = -10; i < count; i++) {
        double t0 = now_s();
        int ok;
        if (udp) {
            /* Each datagram carries its sequence number, so a late echo of a lost one is not
             * taken for the current one. */
            int32_t seq = i, back = 0;
            if (size >= 4) memcpy(buf, &seq, 4);
            ok = send(fd, buf, (size_t)size, 0) == size;
            while (ok) {
                ok = recv(fd, buf, (size_t)size, 0) == size;
                if (size >= 4 && ok) memcpy(&back, buf, 4);
                if (!ok || size < 4 || back == seq) break;
            }
        } else {
            ok = write_full(fd, buf, (size_t)size) == 0 && read_full(fd, buf, (size_t)size) == 0;
            if (!ok) {
                fprintf(stderr, "isthmus-probe: connection to %s lost\n", host);
                return 1;
            }
        }
        double dt = now_s() - t0;
        if (i < 0) continue;
        if (ok) {
            samples[got++] = dt;
            run = 0;
        } else {
            lost++;
            if (++run > longest_run) longest_run = run;
        }
    }
    if (!got) {
        printf("{\"count\": 0, \"lost\": %d, \"longest_loss_run\": %d}\n", lost, longest_run);
        return 1;
    }
    qsort(samples, (size_t)got, sizeof *samples, cmp_double);
    double sum = 0;
    for (int i = 0; i < got; i++) sum += samples[i];
    printf("{\"proto\": \"%s\", \"size\": %d, \"count\": %d, \"lost\": %d, \"longest_loss_run\": %d, "
           "\"min_us\": %.3f, \"median_us\": %.3f, \"p90_us\": %.3f, \"mean_us\": %.3f}\n",
           udp ? "udp" : "tcp", size, got, lost, longest_run, samples[0] * 1e6, samples[got / 2] * 1e6,
           samples[(got * 9) / 10] * 1e6, sum / got * 1e6);
    close(fd);
    free(buf);
    free(samples);
    return 0;
}

static int stream(const char *host, int port, double seconds, int buffer)
{
    int fd = connect_to(host, port, 'S', buffer);
    static char buf[1 << 18];
    double end = now_s() + seconds;
    uint64_t sent = 0;
    while (now_s() < end) {
        ssize_t n = write(fd, buf, sizeof buf);
        if (n <= 0) {
            fprintf(stderr, "isthmus-probe: stream to %s failed: %s\n", host, strerror(errno));
            return 1;
        }
        sent += (uint64_t)n;
    }
    shutdown(fd, SHUT_WR);
    char reply[128] = "";
    ssize_t n = read(fd, reply, sizeof reply - 1);
    unsigned long long total = 0;
    double span = 0;
    if (n <= 0 || sscanf(reply, "%llu %lf", &total, &span) != 2 || span <= 0) {
        fprintf(stderr, "isthmus-probe: no report from the server\n");
        return 1;
    }
    printf("{\"bytes\": %llu, \"seconds\": %.6f, \"goodput_bps\": %.1f, \"buffer\": %d}\n", total, span,
           (double)total * 8 / span, buffer);
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: isthmus-probe serve|rtt HOST|stream HOST [options]\n");
        return 2;
    }
    const char *cmd = argv[1], *host = NULL;
    int port = 5201, udp = 0, size = 64, count = 1000, buffer = 0, timeout_ms = 1000;
    double seconds = 5;
    int i = 2;
    if (strcmp(cmd, "serve") != 0) {
        if (argc < 3) {
            fprintf(stderr, "isthmus-probe %s: a HOST address is needed\n", cmd);
            return 2;
        }
        host = argv[i++];
    }
    for (; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--udp") == 0) udp = 1;
        else if (strcmp(a, "--port") == 0 && v) port = atoi(argv[++i]);
        else if (strcmp(a, "--size") == 0 && v) size = atoi(argv[++i]);
        else if (strcmp(a, "--count") == 0 && v) count = atoi(argv[++i]);
        else if (strcmp(a, "--seconds") == 0 && v) seconds = atof(argv[++i]);
        else if (strcmp(a, "--buffer") == 0 && v) buffer = atoi(argv[++i]);
        else if (strcmp(a, "--timeout-ms") == 0 && v) timeout_ms = atoi(argv[++i]);
        else {
            fprintf(stderr, "isthmus-probe: unknown option '%s'\n", a);
            return 2;
        }
    }
    if (size < 1 || size > 65000 || count < 1 || seconds <= 0 || seconds > 3600) {
        fprintf(stderr, "isthmus-probe: --size 1..65000, --count >= 1, --seconds 0..3600\n");
        return 2;
    }
    if (strcmp(cmd, "serve") == 0) return serve(port, seconds);
    if (strcmp(cmd, "rtt") == 0) return rtt(host, port, udp, size, count, timeout_ms < 1 ? 1 : timeout_ms);
    if (strcmp(cmd, "stream") == 0) return stream(host, port, seconds, buffer);
    fprintf(stderr, "isthmus-probe: unknown command '%s' (serve, rtt, stream)\n", cmd);
    return 2;
}
