/* The router's control socket: one command per connection, one reply ("stats" as JSON,
 * "set LINK key=value...", "ping", "shutdown"; router.c's opening says more). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "router.h"

static void reply_stats(FILE *out)
{
    uint64_t now = now_ns();
    fprintf(out,
            "{\"uptime_s\": %.3f, \"dilation\": %g, \"nice\": %d, \"sched\": \"%s\", "
            "\"pending_packets\": %zu, \"non_ipv4_packets\": %llu, "
            "\"timed_packets\": %llu, \"late_mean_ns\": %.0f, \"late_max_ns\": %llu, \"links\": [",
            (double)(now - start_ns) * 1e-9, dilation, getpriority(PRIO_PROCESS, 0),
            sched_getscheduler(0) == SCHED_FIFO ? "fifo" : "other", heap.n,
            (unsigned long long)non_ipv4,
            (unsigned long long)late_count, late_count ? (double)late_sum_ns / (double)late_count : 0.0,
            (unsigned long long)late_max_ns);
    for (int i = 0; i < nlinks; i++) {
        const struct link *l = &links[i];
        fprintf(out,
                "%s\n  {\"name\": \"%s\", \"latency_ns\": %llu, \"rate\": %.1f, \"jitter_ns\": %llu, "
                "\"dist\": \"%s\", \"reorder\": %d, \"queue\": %llu, \"loss\": %g, \"loss_burst\": %g, "
                "\"packets\": %llu, \"bytes\": %llu, \"queue_drops\": %llu, \"losses\": %llu, "
                "\"backlog\": %llu, \"max_backlog\": %llu}",
                i ? "," : "", l->name, (unsigned long long)l->p.latency_ns, l->p.rate_bytes_per_s,
                (unsigned long long)l->p.jitter_ns, l->p.dist == JITTER_NORMAL ? "normal" : "uniform",
                l->p.reorder, (unsigned long long)l->p.queue_bytes, l->p.loss, l->p.loss_burst,
                (unsigned long long)l->c.packets, (unsigned long long)l->c.bytes,
                (unsigned long long)l->c.queue_drops, (unsigned long long)l->c.losses,
                (unsigned long long)link_backlog(l, now), (unsigned long long)l->c.max_backlog_bytes);
    }
    fputs("\n], \"hosts\": [", out);
    for (int i = 0; i < nhosts; i++) {
        const struct host *h = &hosts[i];
        fprintf(out,
                "%s\n  {\"netns\": \"%s\", \"address\": \"198.18.%u.%u\", \"rx_packets\": %llu, "
                "\"rx_bytes\": %llu, \"tx_packets\": %llu, \"tx_bytes\": %llu, \"unroutable\": %llu, "
                "\"tx_drops\": %llu}",
                i ? "," : "", h->netns, h->addr[2], h->addr[3], (unsigned long long)h->rx_packets,
                (unsigned long long)h->rx_bytes, (unsigned long long)h->tx_packets,
                (unsigned long long)h->tx_bytes, (unsigned long long)h->unroutable,
                (unsigned long long)h->tx_drops);
    }
    fputs("\n]}\n", out);
}

static void command_set(char *args, FILE *out)
{
    char *save = NULL, *name = strtok_r(args, " \t", &save);
    struct link *l = NULL;
    for (int i = 0; name && i < nlinks; i++)
        if (strcmp(links[i].name, name) == 0) l = &links[i];
    if (!l) {
        fprintf(out, "error: no link named '%s'\n", name ? name : "");
        return;
    }
    struct link_params p = l->p;
    for (char *kv = strtok_r(NULL, " \t", &save); kv; kv = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            fprintf(out, "error: expected key=value, got '%s'\n", kv);
            return;
        }
        *eq = '\0';
        if (link_set(&p, kv, eq + 1) != 0) {
            fprintf(out, "error: bad setting %s=%s\n", kv, eq + 1);
            return;
        }
    }
    l->p = p; /* all or nothing */
    fputs("ok\n", out);
}

void router_serve_control(int lfd)
{
    int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) return;
    struct timeval tv = {1, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char line[1024];
    ssize_t n = 0, r;
    while (n < (ssize_t)sizeof line - 1 && (r = read(c, line + n, sizeof line - 1 - (size_t)n)) > 0) {
        n += r;
        if (memchr(line, '\n', (size_t)n)) break;
    }
    line[n > 0 ? n : 0] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    FILE *out = fdopen(c, "w");
    if (!out) {
        close(c);
        return;
    }
    if (strcmp(line, "stats") == 0) reply_stats(out);
    else if (strncmp(line, "set ", 4) == 0) command_set(line + 4, out);
    else if (strcmp(line, "ping") == 0) fputs("pong\n", out);
    else if (strcmp(line, "shutdown") == 0) {
        fputs("ok\n", out);
        stopping = 1;
    } else fprintf(out, "error: unknown command '%s' (stats, set, ping, shutdown)\n", line);
    fclose(out);
}

int router_listen_control(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", control_path);
    unlink(control_path);
    mode_t old = umask(0177); /* the socket is created with mode 0600 */
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc != 0 || listen(fd, 16) != 0) die("cannot listen on %s", control_path);
    return fd;
}
