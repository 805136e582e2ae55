/* isthmus-exec: what the MPI launcher starts for each rank, in place of the application.
 *
 *   isthmus-exec PROGRAM [ARGS...]
 *
 * It prepends $ISTHMUS_PRELOAD (the libisthmus built for the launcher's MPI) to
 * LD_PRELOAD, so that the launcher itself never has the layer loaded, and runs PROGRAM.
 *
 * With $ISTHMUS_STATUS_DIR set it stays as the rank's parent: it passes on the signals a
 * launcher sends, and writes how the rank ended to $ISTHMUS_STATUS_DIR/rank-N
 * ("exit CODE NS HOST" or "signal SIG NS HOST", NS a CLOCK_MONOTONIC time), and while it
 * runs its process id to $ISTHMUS_STATUS_DIR/pid-N ("PID HOST": `isthmus run` takes the
 * ranks' backtraces from it when a run exceeds its --timeout). Launchers report the
 * job's status differently (MPICH's Hydra returns the signal it killed the other ranks
 * with), so `isthmus run` takes the earliest failure from these files instead. The
 * program gets SIGKILL if isthmus-exec dies, so a rank never outlives it.
 *
 * Under emulation $ISTHMUS_NETNS lists the network namespace of every world rank's host,
 * comma-separated, and isthmus-exec first moves into its rank's (needs CAP_SYS_ADMIN) and
 * names it in $ISTHMUS_HOST. With $ISTHMUS_CGROUPS set (time dilation: docs/dilation.md)
 * it then joins its host's CPU cgroup, $ISTHMUS_CGROUPS/<namespace>, so that the rank and
 * everything it starts get that host's share of a CPU.
 *
 * A variable it cannot use stops it before the program starts, with one line naming the
 * variable, its value and what was expected, and status 2 (as isthmus's own bad input). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};
static volatile sig_atomic_t child_pid;

static int prepend_preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    if (!old || !*old) return setenv("LD_PRELOAD", lib, 1);
    size_t n = strlen(lib) + strlen(old) + 2;
    char *both = malloc(n);
    if (!both) return -1;
    snprintf(both, n, "%s:%s", lib, old);
    int rc = setenv("LD_PRELOAD", both, 1);
    free(both);
    return rc;
}

static void forward(int sig)
{
    if (child_pid > 0) kill((pid_t)child_pid, sig);
}

/* The rank number as the launcher gives it, before MPI_Init. */
static const char *rank_id(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return v;
    }
    return "unknown";
}

/* Enter the namespace listed for this rank in ISTHMUS_NETNS; 0 on success. */
static int enter_namespace(const char *list)
{
    const char *rank = rank_id();
    char *end;
    long r = strtol(rank, &end, 10);
    if (*end || r < 0) {
        fprintf(stderr, "isthmus-exec: rank '%s' from the launcher is not a number (expected OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID)\n", rank);
        return -1;
    }
    const char *p = list;
    for (long i = 0; i < r && p; i++) {
        p = strchr(p, ',');
        if (p) p++;
    }
    if (!p || !*p) {
        fprintf(stderr, "isthmus-exec: ISTHMUS_NETNS has no namespace for rank %ld (expected one name per rank, comma-separated)\n", r);
        return -1;
    }
    char path[512];
    size_t len = strcspn(p, ",");
    if (len == 0 || memchr(p, '/', len)) {
        fprintf(stderr, "isthmus-exec: ISTHMUS_NETNS: entry %ld is '%.*s' (expected a namespace name)\n", r, (int)(len < 200 ? len : 200), p);
        return -1;
    }
    snprintf(path, sizeof path, "/var/run/netns/%.*s", (int)(len < 400 ? len : 400), p);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
        fprintf(stderr, "isthmus-exec: ISTHMUS_NETNS: cannot enter %.*s (rank %ld): %s (expected a namespace in /var/run/netns)\n",
                (int)(len < 200 ? len : 200), p, r, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    /* Emulated hosts share the machine's host name: the namespace names the host (the
     * layer's topology and profile read it). */
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(len < 200 ? len : 200), p);
    setenv("ISTHMUS_HOST", host, 1);
    return 0;
}

/* Why PATH cannot serve (NULL if it can): a directory isthmus-exec may write, or a
 * readable regular file. */
static const char *path_problem(const char *path, int want_dir)
{
    struct stat st;
    if (stat(path, &st) != 0) return strerror(errno);
    if (want_dir && !S_ISDIR(st.st_mode)) return "not a directory";
    if (!want_dir && !S_ISREG(st.st_mode)) return "not a regular file";
    if (access(path, want_dir ? W_OK | X_OK : R_OK) != 0) return strerror(errno);
    return NULL;
}

/* 0 when ISTHMUS_STATUS_DIR and every library of ISTHMUS_PRELOAD (a list like LD_PRELOAD's,
 * ':' or ' ' between entries) can serve; otherwise one line naming what and -1. */
static int check_paths(void)
{
    const char *dir = getenv("ISTHMUS_STATUS_DIR");
    const char *problem = dir && *dir ? path_problem(dir, 1) : NULL;
    if (problem) {
        fprintf(stderr, "isthmus-exec: ISTHMUS_STATUS_DIR=%s: %s (expected a directory isthmus-exec may write)\n", dir, problem);
        return -1;
    }
    const char *libs = getenv("ISTHMUS_PRELOAD");
    for (const char *p = libs ? libs : ""; *p;) {
        size_t len = strcspn(p, ": ");
        if (len > 0) {
            char lib[4096];
            snprintf(lib, sizeof lib, "%.*s", (int)(len < sizeof lib - 1 ? len : sizeof lib - 1), p);
            if ((problem = path_problem(lib, 0)) != NULL) {
                fprintf(stderr, "isthmus-exec: ISTHMUS_PRELOAD=%s: %s: %s (expected readable libraries, like LD_PRELOAD's)\n", libs, lib, problem);
                return -1;
            }
        }
        p += len;
        if (*p) p++;
    }
    return 0;
}

/* The host, for the messages naming a rank: the namespace under emulation, the
 * machine's name otherwise. */
static void host_name(char *host, size_t size)
{
    const char *h = getenv("ISTHMUS_HOST");
    if (h && *h) snprintf(host, size, "%s", h);
    else if (gethostname(host, size - 1) != 0) snprintf(host, size, "?");
    host[strcspn(host, " \t\n")] = '\0';
}

static void write_status(const char *dir, int wstatus)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%s", dir, rank_id());
    FILE *f = fopen(path, "w");
    if (!f) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    char host[256] = "";
    host_name(host, sizeof host);
    if (WIFSIGNALED(wstatus)) fprintf(f, "signal %d %lld %s\n", WTERMSIG(wstatus), ns, host);
    else fprintf(f, "exit %d %lld %s\n", WEXITSTATUS(wstatus), ns, host);
    fclose(f);
}

static void write_pid(const char *dir, pid_t pid)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/pid-%s", dir, rank_id());
    FILE *f = fopen(path, "w");
    if (!f) return;
    char host[256] = "";
    host_name(host, sizeof host);
    fprintf(f, "%d %s\n", (int)pid, host);
    fclose(f);
}

/* Join the CPU cgroup of this rank's host (named as its namespace, ISTHMUS_HOST); 0 on
 * success. Works for cgroup v1 and v2: both take a pid written to cgroup.procs. */
static int join_cgroup(const char *base)
{
    const char *host = getenv("ISTHMUS_HOST");
    if (!host || !*host) {
        fprintf(stderr, "isthmus-exec: ISTHMUS_CGROUPS=%s needs ISTHMUS_NETNS (expected emulation)\n", base);
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/cgroup.procs", base, host);
    FILE *f = fopen(path, "w");
    int ok = f && fprintf(f, "%d\n", (int)getpid()) > 0;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) {
        fprintf(stderr, "isthmus-exec: ISTHMUS_CGROUPS: cannot join %s: %s (expected the run's cgroup of this host)\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int run_as_parent(char **argv, const char *status_dir)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("isthmus-exec: fork");
        return 127;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(137); /* the parent is already gone */
        execvp(argv[0], argv);
        fprintf(stderr, "isthmus-exec: cannot run '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    child_pid = pid;
    write_pid(status_dir, pid);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaction(forwarded[i], &sa, NULL);

    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0)
        if (errno != EINTR) {
            perror("isthmus-exec: waitpid");
            return 127;
        }
    write_status(status_dir, wstatus);
    if (WIFSIGNALED(wstatus)) {
        /* End the same way, so the launcher sees what the rank saw. */
        int sig = WTERMSIG(wstatus);
        signal(sig, SIG_DFL);
        raise(sig);
        return 128 + sig;
    }
    return WEXITSTATUS(wstatus);
}

int main(int argc, char **argv)
{
    int first = 1;
    if (first < argc && strcmp(argv[first], "--") == 0) first++;
    if (first >= argc) {
        fprintf(stderr, "usage: isthmus-exec PROGRAM [ARGS...]\n");
        return 2;
    }
    if (check_paths() != 0) return 2;
    const char *netns = getenv("ISTHMUS_NETNS");
    if (netns && *netns && enter_namespace(netns) != 0) return 2;
    const char *cgroups = getenv("ISTHMUS_CGROUPS");
    if (cgroups && *cgroups && join_cgroup(cgroups) != 0) return 2;
    const char *lib = getenv("ISTHMUS_PRELOAD");
    if (lib && *lib) {
        if (prepend_preload(lib) != 0) {
            perror("isthmus-exec: setenv");
            return 127;
        }
    }
    const char *status_dir = getenv("ISTHMUS_STATUS_DIR");
    if (status_dir && *status_dir) return run_as_parent(&argv[first], status_dir);
    execvp(argv[first], &argv[first]);
    fprintf(stderr, "isthmus-exec: cannot run '%s': %s\n", argv[first], strerror(errno));
    return 127;
}
