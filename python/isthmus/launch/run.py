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
import functools
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from isthmus import __version__, records
from isthmus.config import paths
from isthmus.config.platform import Platform
from isthmus.emulate import dilation as scale
from isthmus.emulate import leftovers, net, rootless, signals
from isthmus.emulate.plan import CONTROL_HOST, make_plan, netns_name
from isthmus.errors import UserError
from isthmus.launch import backtraces, mpi, zipper
from isthmus.launch.environment import (
    collective_environment,
    layer_environment,
    pio_environment,
    rank_count,
    wait_mode,
)
from isthmus.launch.processes import (
    EXIT_NETWORK_FAILED,
    forwarders_stats,
    launch,
    launch_all,
    rank_namespaces,
    zipped_processes,
)
from isthmus.launch.status import first_failure
from isthmus.profile import forwarders as profile_forwarders


def _report_backtraces(status_dir: Path, netname: str, timeout: float) -> None:
    """At the timeout, before the job is stopped: where every rank is."""
    where = Path(tempfile.gettempdir()) / f"isthmus-backtraces-{netname}-{os.getpid()}.txt"
    lines = backtraces.dump(status_dir, where, netns_name(netname, ""))
    stacks = f" (every thread's stack: {where})" if where.exists() else ""
    print(f"isthmus: --timeout {timeout:g}s passed; where each rank was{stacks}:", file=sys.stderr)
    for line in lines:
        print(f"  {line}", file=sys.stderr)


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


def _annotate_profile(
    path: Path, run_info: dict[str, Any], forwarded: list[dict[str, Any]]
) -> None:
    """Add how the run was made, and what the forwarders carried, to the profile the layer
    wrote (atomically)."""
    data = records.read_json(path, "profile", "profile")
    data["run"] = run_info
    if forwarded:
        data["forwarders"] = forwarded
    records.write_json(path, data, "profile")


def _dilation(req: RunRequest, emulate: bool, own_network: bool) -> scale.Dilation:
    """The K in force: the platform's for a network of the run's own, the network's when
    the run uses one that is up (--net)."""
    if not emulate:
        if req.platform.emulation.dilation != 1.0:
            raise UserError(
                "emulation.dilation: dilation needs the emulated network (real sites run in "
                "real time): expected 1"
            )
        return scale.Dilation(1.0, "real sites")
    if own_network:
        return scale.resolve(req.platform)
    st = net.load_state(req.net or "")
    if st is None or len(st.hosts) != len(make_plan(req.platform).hosts):
        raise UserError(f"--net {req.net}: that network was made for another platform")
    return scale.Dilation(st.dilation, f"K = {st.dilation:g}: network {req.net}'s")


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
        hosts = make_plan(req.platform).hosts
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
    dilation = _dilation(req, emulate, own_network)
    if own_network and os.geteuid() != 0:
        if dilation.active:
            scale.require_writable()  # refused with the reason: cgroups need root
        rootless.reexec()  # does not return: the run continues inside a user namespace
    cores = os.cpu_count() or 1
    if dilation.active:
        auto = scale.auto_factor(req.platform).factor if emulate else 1.0
        short = (
            f"; below auto ({auto:g}) the hosts still share cores" if dilation.factor < auto else ""
        )
        print(
            f"isthmus: time dilation {dilation.why}; the run takes about {dilation.factor:g}x "
            f"as long, and every time it reports is virtual (docs/dilation.md){short}",
            file=sys.stderr,
        )
    elif nranks > cores:
        print(
            f"isthmus: {nranks} ranks on {cores} cores: ranks take turns on the cores, so "
            "timings include time spent waiting for one (emulation.dilation = 'auto' gives "
            "each host its cores: docs/dilation.md)",
            file=sys.stderr,
        )
    timeout = req.timeout * dilation.factor if req.timeout else req.timeout
    forwarded: list[dict[str, Any]] = []  # what each zipper forwarder carried
    try:
        if own_network:
            for left, pid in leftovers.remove_orphans():
                print(
                    f"isthmus: removed network {left}, left by a killed isthmus run (pid {pid})",
                    file=sys.stderr,
                )
            net.up(
                req.platform,
                netname,
                list(req.overrides),
                owner_pid=os.getpid(),
                dilation=dilation.factor,
            )
        with tempfile.TemporaryDirectory(prefix="isthmus-status-") as status_dir:
            layer_env = layer_environment(req.platform, impl, profile)
            layer_env["ISTHMUS_STATUS_DIR"] = status_dir
            layer_env.update(collective_environment(req.platform, Path(status_dir)))
            layer_env["ISTHMUS_WAIT"] = wait_mode(
                req.platform, impl, nranks, cores, dilation.factor
            )
            layer_env.update(pio_environment(req.platform, nranks))
            layer_env.update(site_env)
            if site_env and os.environ.get("ISTHMUS_CLUSTER"):  # the documented override
                layer_env["ISTHMUS_CLUSTER"] = os.environ["ISTHMUS_CLUSTER"]
            layer_env.update(dict(req.environment))
            prefix: list[str] = []
            alive = None
            if emulate:
                layer_env["ISTHMUS_NETNS"] = ",".join(rank_namespaces(req.platform, netname))
                if dilation.active:
                    st_now = net.load_state(netname)
                    # through our root: `ip netns exec` gives the launcher a /sys of its
                    # own, without the cgroup file systems
                    cgroups = st_now.cgroups if st_now else ""
                    layer_env["ISTHMUS_CGROUPS"] = f"/proc/{os.getpid()}/root{cgroups}"
                    # virtual time equals real time at this instant, in every rank
                    layer_env["ISTHMUS_DILATION"] = f"{dilation.factor:.9g}:{time.monotonic_ns()}"
                layer_env.update(mpi.emulation_environment(impl))
                prefix = ["ip", "netns", "exec", netns_name(netname, CONTROL_HOST)]
                alive = lambda: net.is_up(netname)  # noqa: E731
            env = {**os.environ, **layer_env}
            argv = [str(paths.exec_wrapper()), *req.app]
            cmd = prefix + impl.launch_command(nranks, sorted(layer_env), argv)
            started = time.monotonic()
            on_timeout = functools.partial(
                _report_backtraces, Path(status_dir), netname, timeout or 0.0
            )
            with open(req.stdout, "wb") if req.stdout else contextlib.nullcontext() as out:
                if zipped:
                    launchers, forwarders = zipped_processes(
                        req.platform, impl, netname, layer_env, argv, Path(status_dir)
                    )
                    cmd = launchers[0].cmd
                    rc, stopped = launch_all(launchers, forwarders, timeout, alive, out, on_timeout)
                    forwarded = profile_forwarders.merged(
                        profile_forwarders.read_stats(forwarders_stats(Path(status_dir))),
                        dilation.factor,
                    )
                else:
                    rc, stopped = launch(cmd, env, timeout, alive, out, on_timeout)
            wall = time.monotonic() - started
            failure = None
            if rc != 0 and stopped is None and alive is not None and not alive():
                # the router died and a rank noticed before isthmus did: the router is the cause
                rc, stopped = EXIT_NETWORK_FAILED, "network"
            # A forwarder killed is the cause: the ranks' failures follow from it (one that
            # exits 1 does so because a rank went first, and that rank is the cause).
            forwarder_failed = (
                stopped is not None
                and stopped.startswith("the forwarder")
                and ("killed by signal" in stopped)
            )
            if (
                rc != 0
                and not forwarder_failed
                and stopped not in ("timeout", "network", *signals.STOPPING_NAMES)
            ):
                failure = first_failure(Path(status_dir))
                rc = failure.code if failure is not None else rc
    finally:
        if own_network:
            with signals.deferred():
                net.down(netname)
    if stopped == "timeout":
        scaled = f" ({timeout:g}s real at dilation {dilation.factor:g})" if dilation.active else ""
        print(
            f"isthmus: the run exceeded --timeout {req.timeout:g}s{scaled} and was stopped",
            file=sys.stderr,
        )
    elif stopped == "network":
        print(
            f"isthmus: the router of network {netname} died during the run; the run was stopped",
            file=sys.stderr,
        )
    elif stopped in signals.STOPPING_NAMES:
        print(f"isthmus: stopped by {stopped}: the job was stopped", file=sys.stderr)
    elif stopped is not None:
        print(f"isthmus: {stopped}; the other sites' jobs were stopped", file=sys.stderr)
    if failure is not None:
        print(
            f"isthmus: {failure.describe(netns_name(netname, ''))}: the job's status is {rc}",
            file=sys.stderr,
        )

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
                        # what discovery (layer.clusters = "auto") is checked against
                        "rank_clusters": req.platform.rank_clusters()[:nranks]
                        if req.platform.emulated
                        else None,
                        # where every rank ran (isthmus profile advise starts from it)
                        "placement": {
                            "hosts": [s.host for s in req.platform.rank_slots()],
                            "clusters": [s.cluster for s in req.platform.rank_slots()],
                        }
                        if req.platform.emulated
                        else None,
                    },
                    "mpi": impl.name,
                    "nranks": nranks,
                    "cores": cores,  # ranks per core: what the report's model gap rests on
                    "app": req.app,
                    "launcher": cmd,
                    "exit_code": rc,
                    "wall_seconds": round(wall, 6),
                    # the profile's times are virtual: real time / dilation
                    "dilation": dilation.factor,
                    "dilation_why": dilation.why,
                },
                forwarded,
            )
        else:
            print(
                f"isthmus: no profile was written to {profile}: the application did not "
                "reach MPI_Finalize",
                file=sys.stderr,
            )
    return rc
