"""`isthmus run`: start the MPI launcher so that every rank runs with libisthmus.

The launcher starts isthmus-exec for each rank, which preloads the layer built for that
MPI and execs the application; the launcher itself never loads the layer. Every rank is
told the platform's clusters (block mapping of world ranks, or host-name patterns on a
real site). The application's exit status comes back as ours; SIGINT, SIGTERM and SIGHUP
are passed on to the launcher, which stops the ranks.

On an emulated platform the run uses the network named by --net when it is up, and
otherwise brings one up for the run and down after it. The launcher runs in the control
host's namespace; isthmus-exec moves each rank into its host's namespace (block mapping:
the ranks of a host are consecutive); the MPI is told to use TCP on the emulated device
only. If the router dies, the run is stopped within a second (exit code 125).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import IO, Any

from . import __version__, mpi, net, paths, records, rootless, signals, zipper
from .errors import UserError
from .platform import Platform

EXIT_TIMEOUT = 124  # as timeout(1)
EXIT_NETWORK_FAILED = 125
KILL_GRACE_SECONDS = 5.0


@dataclass
class RunRequest:
    platform: Platform
    app: list[str]
    nranks: int | None = None
    mpi: str | None = None
    overrides: tuple[str, ...] = ()
    profile: Path | None = None
    timeout: float | None = None
    net: str | None = None  # an emulated network that is already up
    emulate: bool = True
    stdout: Path | None = None  # where the application's standard output goes (default: ours)
    environment: tuple[tuple[str, str], ...] = ()  # more variables for every rank (they win)
    # one site's job of a zipped platform on real machines (docs/zipper.md)
    site: str | None = None
    site_ranks: tuple[tuple[str, int], ...] = ()
    forwarders: tuple[str, ...] = ()


def rank_count(platform: Platform, requested: int | None) -> int:
    if platform.emulated:
        if requested is not None and requested != platform.total_ranks:
            raise UserError(
                f"-n {requested}: the platform {platform.name} has {platform.total_ranks} ranks "
                f"({', '.join(f'{n}: {k}' for n, k in platform.rank_blocks())}); change the "
                "platform (for example --set clusters.NAME.hosts=N) or leave -n out"
            )
        return platform.total_ranks
    if requested is None:
        raise UserError(f"-n is needed: the platform {platform.name} places ranks by host name")
    if requested < 1:
        raise UserError(f"-n {requested}: expected a positive number of ranks")
    return requested


def pio_environment(platform: Platform, nranks: int) -> dict[str, str]:
    """The platform's [io] table for the pio library (src/pio/pio.h), and every
    ISTHMUS_PIO_* variable of the caller's environment (they win), for the ranks."""
    env = {}
    if platform.io is not None:
        servers = platform.io_server_ranks(nranks)
        env = {
            "ISTHMUS_PIO_SERVERS": ",".join(map(str, servers)),
            "ISTHMUS_PIO_DIR": platform.io.directory,
            "ISTHMUS_PIO_STRIPE": str(platform.io.stripe),
        }
        window = pio_window(platform, servers, nranks)
        if window is not None:
            env["ISTHMUS_PIO_WINDOW"] = str(window)
    env.update({k: v for k, v in os.environ.items() if k.startswith("ISTHMUS_PIO_")})
    return env


def pio_window(platform: Platform, servers: list[int], nranks: int) -> int | None:
    """window-IOS's bytes in flight (docs/pio.md): twice the bandwidth-delay product of the
    path between the first client's host and the first server's, from the platform's
    links (the round trip's latencies times the narrowest rate towards the server): a piece
    past the MPI's eager limit spends a round trip on its handshake before its data travel.
    None where the platform cannot say (ranks placed by host name, no rate limit, no
    wide-area link)."""
    if not platform.emulated or not servers:
        return None
    where = platform.rank_clusters()
    clients = [r for r in range(min(nranks, len(where))) if r not in servers]
    if not clients or servers[0] >= len(where):
        return None
    client, server = where[clients[0]], where[servers[0]]
    there, back = platform.route(client, server), platform.route(server, client)
    if there is None or back is None:
        return None
    rates = [lk.bandwidth for lk in there if lk.bandwidth]
    if not rates:
        return None
    return round(2 * min(rates) * sum(lk.latency for lk in there + back))


def layer_environment(
    platform: Platform, impl: mpi.MpiImplementation, profile: Path | None
) -> dict[str, str]:
    """The variables that isthmus-exec and libisthmus read in each rank."""
    env = {
        "ISTHMUS_PRELOAD": str(paths.layer_library(impl.name)),
        "ISTHMUS_PLATFORM_NAME": platform.name,
        "ISTHMUS_GIT_REVISION": paths.git_revision(),
    }
    if platform.emulated:
        env["ISTHMUS_CLUSTERS"] = ",".join(f"{n}:{k}" for n, k in platform.rank_blocks())
    patterns = [
        f"{c.name}={','.join(c.host_patterns)}" for c in platform.clusters if c.host_patterns
    ]
    if patterns:
        env["ISTHMUS_CLUSTER_PATTERNS"] = ";".join(patterns)
    if profile is not None:
        env["ISTHMUS_PROFILE"] = str(profile)
    return env


# The selector's variables: set in the environment of isthmus run, they win over the file.
COLLECTIVE_VARIABLES = (
    "ISTHMUS_COLL",
    "ISTHMUS_COLL_DISABLE",
    "ISTHMUS_COLL_ALGORITHM",
    "ISTHMUS_COLL_SEGMENT",
    "ISTHMUS_COLL_LOG",
    "ISTHMUS_COLL_SELECT",
    "ISTHMUS_COLL_TUNING",
    "ISTHMUS_PLOGP",
)


def collective_environment(platform: Platform, workdir: Path) -> dict[str, str]:
    """The WAN-aware collectives' settings for libisthmus (src/coll/hier.h), from the
    platform's layer.collectives and [collectives], then the caller's environment. The
    model parameters are the file [collectives] params names (checked against the
    platform), or derived from the platform's links into workdir."""
    from . import plogp  # not at the top: plogp reads benchmark files, and bench runs us

    c = platform.collectives
    env = {"ISTHMUS_COLL": platform.layer.collectives}
    if c.disable:
        env["ISTHMUS_COLL_DISABLE"] = ",".join(c.disable)
    if c.algorithm:
        env["ISTHMUS_COLL_ALGORITHM"] = ",".join(f"{k}:{v}" for k, v in c.algorithm)
    if c.segment:  # every collective's first, then single ones (src/coll/settings.c)
        env["ISTHMUS_COLL_SEGMENT"] = ",".join(f"{k}:{v}" if k else str(v) for k, v in c.segment)
    if c.log:
        env["ISTHMUS_COLL_LOG"] = "1"
    if c.select != "model":
        env["ISTHMUS_COLL_SELECT"] = c.select
    if c.tuning is not None:
        if not c.tuning.is_file():
            raise UserError(f"collectives.tuning: {c.tuning}: no such file (isthmus coll tune)")
        env["ISTHMUS_COLL_TUNING"] = str(c.tuning.resolve())
    if c.params is not None:
        params = plogp.read(c.params)
        plogp.check_platform(params, platform, c.params)
        env["ISTHMUS_PLOGP"] = str(c.params.resolve())
    elif len(platform.clusters) > 1:
        derived = workdir / "plogp.txt"
        plogp.write(plogp.from_platform(platform), derived)
        env["ISTHMUS_PLOGP"] = str(derived)
    env.update({k: os.environ[k] for k in COLLECTIVE_VARIABLES if k in os.environ})
    return env


def _die_with_parent() -> None:
    """In the launcher's child: get SIGTERM if isthmus itself dies, so no job is orphaned."""
    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the launcher; after a grace period SIGKILL its whole process group."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(KILL_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def wait_mode(platform: Platform, impl: mpi.MpiImplementation, nranks: int, cores: int) -> str:
    """spin or sleep: layer.wait; auto sleeps when the ranks outnumber the cores. MPICH
    busy-polls (an 8-rank Allreduce on 2 cores: 28 ms spinning, 1.4 ms sleeping); Open MPI
    yields when oversubscribed, which keeps collectives fast (0.42 against 1.02 ms) but lets
    its idle ranks starve rendezvous transfers of the others (over 60 s against 2.1 s,
    results/net/README.md): a run must finish before it can be fast."""
    if platform.layer.wait != "auto":
        return platform.layer.wait
    return "sleep" if nranks > cores else "spin"


def rank_namespaces(platform: Platform, netname: str) -> list[str]:
    """The namespace of every world rank's host, in rank order: a cluster's ranks fill its
    hosts in order, ranks_per_host each, whatever the placement."""
    out = []
    taken = dict.fromkeys((c.name for c in platform.clusters), 0)
    per_host = {c.name: c.ranks_per_host for c in platform.clusters}
    for name in platform.rank_clusters():
        host = taken[name] // per_host[name]
        taken[name] += 1
        out.append(net.netns_name(netname, f"{name}{host}"))
    for z in platform.zippers:
        for h in range(z.hosts):
            out += [net.netns_name(netname, f"{z.name}{h}")] * z.ranks_per_host
    return out


def launch(
    cmd: list[str],
    env: dict[str, str],
    timeout: float | None,
    alive: Callable[[], bool] | None = None,
    stdout: IO[bytes] | None = None,
) -> tuple[int, str | None]:
    """Run the launcher in its own process group; return (exit code, why it was stopped:
    None, "timeout" or "network")."""
    proc = subprocess.Popen(
        cmd, env=env, start_new_session=True, preexec_fn=_die_with_parent, stdout=stdout
    )

    received: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in signals.STOPPING}
    stopped: str | None = None
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while proc.poll() is None:
            try:
                proc.wait(0.5)
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() >= deadline:
                    stopped = "timeout"
                elif alive is not None and not alive():
                    stopped = "network"
                if stopped:
                    _stop(proc)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        # A launcher told to stop may exit before its ranks do: nothing of the job
        # (its process group) outlives the run, nor the network it takes down next.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    rc = proc.returncode
    if stopped == "timeout":
        return EXIT_TIMEOUT, stopped
    if stopped == "network":
        return EXIT_NETWORK_FAILED, stopped
    if rc == 0 and received:
        # Hydra sometimes kills its proxies before they report the ranks' deaths and then
        # returns 0; an interrupted job must not look like a successful one.
        return 128 + received[0], None
    return (128 - rc if rc < 0 else rc), None


@dataclass
class Process:
    """One process of a zipped run: a site's launcher or a forwarder."""

    what: str  # for messages: "the launcher of site left" or "the forwarder on gate0"
    cmd: list[str]
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None


def launch_all(
    launchers: list[Process],
    forwarders: list[Process],
    timeout: float | None,
    alive: Callable[[], bool] | None,
    stdout: IO[bytes] | None,
) -> tuple[int, str | None]:
    """Run the forwarders and the sites' launchers, each in its own process group, until
    every launcher has ended; the first that fails (a launcher or forwarder that exits
    other than 0) stops all the others at once. Returns (exit code, why it was stopped:
    None, "timeout", "network", or the message naming the process that failed first)."""
    every = forwarders + launchers
    for p in every:
        p.proc = subprocess.Popen(
            p.cmd, env=p.env, start_new_session=True, preexec_fn=_die_with_parent, stdout=stdout
        )
    received: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        for p in launchers:
            with contextlib.suppress(ProcessLookupError):
                assert p.proc is not None
                p.proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in signals.STOPPING}
    stopped: str | None = None
    failed: Process | None = None
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while any(p.proc is not None and p.proc.poll() is None for p in launchers):
            time.sleep(0.1)
            failed = next(
                (p for p in every if p.proc is not None and p.proc.poll() not in (None, 0)), None
            )
            if failed is not None:
                break
            if deadline is not None and time.monotonic() >= deadline:
                stopped = "timeout"
                break
            if alive is not None and not alive():
                stopped = "network"
                break
        if failed is None and stopped is None:
            # Every launcher ended well: the forwarders end once every rank has said bye.
            end = time.monotonic() + KILL_GRACE_SECONDS
            while time.monotonic() < end and any(
                p.proc is not None and p.proc.poll() is None for p in forwarders
            ):
                time.sleep(0.05)
            failed = next(
                (p for p in forwarders if p.proc is not None and p.proc.poll() not in (None, 0)),
                None,
            )
    finally:
        for p in every:
            if p.proc is not None and p.proc.poll() is None:
                _stop(p.proc)
        for s, handler in previous.items():
            signal.signal(s, handler)
        for p in every:
            with contextlib.suppress(ProcessLookupError):
                assert p.proc is not None
                os.killpg(p.proc.pid, signal.SIGKILL)
    if stopped == "timeout":
        return EXIT_TIMEOUT, stopped
    if stopped == "network":
        return EXIT_NETWORK_FAILED, stopped
    if failed is not None:
        assert failed.proc is not None
        rc = failed.proc.returncode
        return (128 - rc if rc < 0 else rc), f"{failed.what} ended with status {rc}"
    if received:
        return 128 + received[0], None
    return 0, None


def zipped_processes(
    platform: Platform,
    impl: mpi.MpiImplementation,
    netname: str,
    layer_env: dict[str, str],
    argv: list[str],
    status_dir: Path,
) -> tuple[list[Process], list[Process]]:
    """The sites' launchers (each inside its first host's namespace, over its own ranks'
    namespaces) and the forwarders on the zipper hosts, of a zipped run (docs/zipper.md)."""
    netplan = net.plan(platform)
    zplan = zipper.plan(platform, {h.name: h.address for h in netplan.hosts if h.zipper})
    namespaces = rank_namespaces(platform, netname)
    nranks = len(zplan.site_of_rank)
    forwarders = [
        Process(
            f"the forwarder on {f.host}",
            [
                "ip", "netns", "exec", net.netns_name(netname, f.host),
                str(paths.forwarder()), "--listen", f.address, "--ranks", str(nranks),
                "--name", f.host,
            ],
            dict(os.environ),
        )
        for f in zplan.forwarders
    ]  # fmt: skip
    launchers = []
    for site, clusters in enumerate(zplan.site_clusters):
        ranks = zplan.site_ranks(site)
        site_status = status_dir / f"site-{site}"
        site_status.mkdir()
        env = {
            **layer_env,
            **zplan.environment(site),
            "ISTHMUS_NETNS": ",".join(namespaces[r] for r in ranks),
            "ISTHMUS_STATUS_DIR": str(site_status),
        }
        cmd = ["ip", "netns", "exec", namespaces[ranks[0]]]
        cmd += impl.launch_command(len(ranks), sorted(env), argv)
        launchers.append(
            Process(f"the job of site {'+'.join(clusters)}", cmd, {**os.environ, **env})
        )
    return launchers, forwarders


def first_failure(status_dir: Path) -> int | None:
    """The exit code of the rank that failed first (128+N for signal N), from the files
    isthmus-exec writes; None when every rank exited 0 or none wrote one. Ranks that failed
    before MPI_Finalize come first (the layer leaves finalizing-N when rank N enters it):
    a rank failing inside it is usually a casualty of a peer that had already gone."""
    failures = []
    for f in status_dir.glob("**/rank-*"):  # a zipped run has one directory per site
        try:
            how, value, ns = f.read_text().split()
        except ValueError:
            continue
        code = int(value) if how == "exit" else 128 + int(value)
        if code != 0:
            in_finalize = (f.parent / f"finalizing-{f.name[len('rank-') :]}").exists()
            failures.append((in_finalize, int(ns), code))
    return min(failures)[2] if failures else None


def _annotate_profile(path: Path, run_info: dict[str, Any]) -> None:
    """Add how the run was made to the profile the layer wrote (atomically)."""
    data = records.read_json(path, "profile", "profile")
    data["run"] = run_info
    records.write_json(path, data, "profile")


def run(req: RunRequest) -> int:
    if not req.app:
        raise UserError("no application given: isthmus run -p PLATFORM -- APP [ARGS...]")
    impl = mpi.choose(req.mpi, req.app[0])
    zipped = zipper.zipped(req.platform)
    site_env: dict[str, str] = {}
    if zipped and not (req.emulate and req.platform.emulated):
        if req.site is None:
            raise UserError(
                f"{req.platform.path}: its clusters are joined only through zipper hosts: on "
                "real sites run each site's job with --site, --site-ranks and --forwarders "
                "(docs/zipper.md)"
            )
        zplan, site = zipper.real_site_plan(
            req.platform, req.site, dict(req.site_ranks), list(req.forwarders)
        )
        site_env = zplan.environment(site)
        nranks = len(zplan.site_ranks(site))
        if req.nranks is not None and req.nranks != nranks:
            raise UserError(f"-n {req.nranks}: --site-ranks gives site {req.site} {nranks}")
        zipped = False  # this launcher runs one site's job: no forwarders to start here
    else:
        if req.site is not None:
            raise UserError(
                "--site: only for a platform of real sites joined by zipper hosts (docs/zipper.md)"
            )
        nranks = rank_count(req.platform, req.nranks)
    if zipped:
        if req.profile is not None or req.platform.layer.profile:
            raise UserError("--profile: profiling a run across zipper hosts is not supported yet")
        hosts = net.plan(req.platform).hosts
        zipper.plan(req.platform, {h.name: h.address for h in hosts if h.zipper})  # refusals
    profile = req.profile
    if profile is None and req.platform.layer.profile:
        profile = Path("isthmus-profile.json")
    if profile is not None:
        profile = profile.resolve()
        if not profile.parent.is_dir():
            raise UserError(f"--profile {profile}: the directory {profile.parent} does not exist")
        profile.unlink(missing_ok=True)

    emulate = req.emulate and req.platform.emulated
    netname = req.net or f"run{os.getpid()}"
    own_network = emulate and not (req.net and net.is_up(req.net))
    if own_network and os.geteuid() != 0:
        rootless.reexec()  # does not return: the run continues inside a user namespace
    cores = os.cpu_count() or 1
    if nranks > cores:
        print(
            f"isthmus: {nranks} ranks on {cores} cores: ranks take turns on the cores, so "
            "timings include time spent waiting for one",
            file=sys.stderr,
        )
    if req.net and not own_network and emulate:
        st = net.load_state(req.net)
        if st is None or len(st.hosts) != len(net.plan(req.platform).hosts):
            raise UserError(f"--net {req.net}: that network was made for another platform")
    try:
        if own_network:
            net.remove_orphans()
            net.up(req.platform, netname, list(req.overrides), owner_pid=os.getpid())
        with tempfile.TemporaryDirectory(prefix="isthmus-status-") as status_dir:
            layer_env = layer_environment(req.platform, impl, profile)
            layer_env["ISTHMUS_STATUS_DIR"] = status_dir
            layer_env.update(collective_environment(req.platform, Path(status_dir)))
            layer_env["ISTHMUS_WAIT"] = wait_mode(req.platform, impl, nranks, cores)
            layer_env.update(pio_environment(req.platform, nranks))
            layer_env.update(site_env)
            if site_env and os.environ.get("ISTHMUS_CLUSTER"):  # the documented override
                layer_env["ISTHMUS_CLUSTER"] = os.environ["ISTHMUS_CLUSTER"]
            layer_env.update(dict(req.environment))
            prefix: list[str] = []
            alive = None
            if emulate:
                layer_env["ISTHMUS_NETNS"] = ",".join(rank_namespaces(req.platform, netname))
                layer_env.update(mpi.emulation_environment(impl))
                prefix = ["ip", "netns", "exec", net.netns_name(netname, net.CONTROL_HOST)]
                alive = lambda: net.is_up(netname)  # noqa: E731
            env = {**os.environ, **layer_env}
            argv = [str(paths.exec_wrapper()), *req.app]
            cmd = prefix + impl.launch_command(nranks, sorted(layer_env), argv)
            started = time.monotonic()
            with open(req.stdout, "wb") if req.stdout else contextlib.nullcontext() as out:
                if zipped:
                    launchers, forwarders = zipped_processes(
                        req.platform, impl, netname, layer_env, argv, Path(status_dir)
                    )
                    cmd = launchers[0].cmd
                    rc, stopped = launch_all(launchers, forwarders, req.timeout, alive, out)
                else:
                    rc, stopped = launch(cmd, env, req.timeout, alive, out)
            wall = time.monotonic() - started
            if rc != 0 and stopped not in ("timeout", "network"):
                rc = first_failure(Path(status_dir)) or rc
    finally:
        if own_network:
            with signals.deferred():
                net.down(netname)
    if stopped == "timeout":
        print(
            f"isthmus: the run exceeded --timeout {req.timeout:g}s and was stopped", file=sys.stderr
        )
    elif stopped == "network":
        print(
            f"isthmus: the router of network {netname} died during the run; the run was stopped",
            file=sys.stderr,
        )
    elif stopped is not None:
        print(f"isthmus: {stopped}; the other sites' jobs were stopped", file=sys.stderr)

    if profile is not None:
        if profile.exists():
            _annotate_profile(
                profile,
                {
                    "isthmus_version": __version__,
                    "git_revision": paths.git_revision(),
                    "date": datetime.now(UTC).isoformat(timespec="seconds"),
                    "platform": {
                        "name": req.platform.name,
                        "path": str(req.platform.path),
                        "overrides": list(req.overrides),
                    },
                    "mpi": impl.name,
                    "nranks": nranks,
                    "app": req.app,
                    "launcher": cmd,
                    "exit_code": rc,
                    "wall_seconds": round(wall, 6),
                },
            )
        else:
            print(
                f"isthmus: no profile was written to {profile}: the application did not "
                "reach MPI_Finalize",
                file=sys.stderr,
            )
    return rc
