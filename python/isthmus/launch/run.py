"""`isthmus run`: start the job so that every rank runs with libisthmus.

The run is planned once (launch/plan.py): its sites, each one native MPI job with its
ranks and its launcher (the MPI's own mpirun or mpiexec, or a cluster's Slurm), and the
forwarders that join several sites into one MPI_COMM_WORLD. Carrying the plan out: every
Slurm site's job is allocated first, all or none (launch/coallocation.py), then each
site's launcher starts isthmus-exec for each of its ranks, which preloads the layer
built for that MPI and execs the application; a launcher never loads the layer. The
application's exit status comes back as ours (the rank that failed first decides it);
SIGINT, SIGTERM and SIGHUP are passed on to the launchers, which stop the ranks.

On an emulated platform the run uses the network named by --net when it is up, and
otherwise brings one up for the run and down after it. A direct run's launcher runs in
the control host's namespace; isthmus-exec moves each rank into its host's namespace;
the MPI is told to use TCP on the emulated device only. If the router dies, the run is
stopped within a second (exit code 125).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.emulate import dilation as scale
from isthmus.emulate import leftovers, net, rootless, signals
from isthmus.emulate.plan import make_plan, netns_name
from isthmus.errors import UserError
from isthmus.launch import backtraces, coallocation, mpi, run_record, zipper
from isthmus.launch import plan as launch_plan
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
    site_command,
    site_processes,
)
from isthmus.launch.run_record import Outcome, RunRequest
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


def _site_environment(req: RunRequest) -> tuple[int, dict[str, str]]:
    """The run's number of ranks and, for one site's job of a zipped platform on real
    machines (--site), what joins it to the other sites' jobs."""
    zipped = zipper.zipped(req.platform)
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
        nranks = len(zplan.site_ranks(site))
        if req.nranks is not None and req.nranks != nranks:
            raise UserError(f"-n {req.nranks}: --site-ranks gives site {req.site} {nranks}")
        site_env = zplan.environment(site)
        if os.environ.get("ISTHMUS_CLUSTER"):  # the documented override
            site_env["ISTHMUS_CLUSTER"] = os.environ["ISTHMUS_CLUSTER"]
        return nranks, site_env
    if req.site is not None:
        raise UserError(
            "--site: only for a platform of real sites joined by zipper hosts (docs/zipper.md)"
        )
    return rank_count(req.platform, req.nranks), {}


def _profile_path(req: RunRequest) -> Path | None:
    profile = req.profile
    if profile is None and req.platform.layer.profile:
        profile = Path("isthmus-profile.json")
    if profile is not None:
        profile = profile.resolve()
        if not profile.parent.is_dir():
            raise UserError(f"--profile {profile}: the directory {profile.parent} does not exist")
        profile.unlink(missing_ok=True)
    return profile


def _say_time_model(
    req: RunRequest, dilation: scale.Dilation, emulate: bool, nranks: int, cores: int
) -> None:
    """What the run's times will mean: dilated (virtual), or ranks sharing cores."""
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


def _show_ranks(
    progress: coallocation.Progress,
    lplan: launch_plan.LaunchPlan,
    allocations: list[coallocation.Allocation],
    status_dir: Path,
) -> None:
    """The progress line once the jobs run: how many of each site's ranks have started
    (isthmus-exec's pid files), until all have."""
    jobs = {a.site: a for a in allocations}
    parts = []
    for i, site in enumerate(lplan.sites):
        where = status_dir / f"site-{i}" if lplan.zip is not None else status_dir
        started = sum(1 for _ in where.glob("pid-*"))
        # a site without an allocation here runs in a job allocated by `run --sites`
        state = (
            coallocation.describe(jobs[site.name]) if site.name in jobs else f"{site.name}: running"
        )
        parts.append(f"{state}, {started}/{len(site.ranks)} ranks started")
    progress.show(parts)


def _wide_area(netname: str) -> tuple[dict[str, Any], ...]:
    """What each wide-area link of the emulated network carried (the router's counters,
    since the network came up for this run); nothing when the router is gone."""
    try:
        links = net.stats(netname)["links"]
    except (UserError, OSError, ValueError, KeyError):
        return ()
    return tuple({"link": lk["name"], "bytes": lk["bytes"], "packets": lk["packets"]}
                 for lk in links if lk["name"].startswith("wan:"))  # fmt: skip


def _carry_out(
    req: RunRequest,
    impl: mpi.MpiImplementation,
    lplan: launch_plan.LaunchPlan,
    layer_env: dict[str, str],
    netname: str,
    emulate: bool,
    dilation: scale.Dilation,
    status_dir: Path,
) -> Outcome:
    """Carry the plan out: every Slurm site's job allocated first (all or none), then
    one launcher per site (and the forwarders joining them), until the job ends."""
    alive = (lambda: net.is_up(netname)) if emulate else None
    timeout = req.timeout * dilation.factor if req.timeout else req.timeout
    on_timeout = functools.partial(_report_backtraces, status_dir, netname, timeout or 0.0)
    argv = [str(paths.exec_wrapper()), *req.app]
    forwarded: list[dict[str, Any]] = []
    started, started_unix = time.monotonic(), time.time()
    progress = coallocation.Progress()
    with (
        open(req.stdout, "wb") if req.stdout else contextlib.nullcontext() as out,
        coallocation.coallocated(
            [] if req.slurm_job else coallocation.for_plan(lplan, netname),
            req.coallocate_timeout or 120.0,
            progress,
        ) as allocations,
    ):
        jobs = {a.site: (a.access, a.job) for a in allocations}
        if req.slurm_job is not None:  # a real site's job, allocated by `run --sites`
            jobs[lplan.sites[0].name] = (list, req.slurm_job)
        ranks = {site.name: list(site.ranks) for site in lplan.sites}
        batch = [coallocation.record(a, ranks[a.site]) for a in allocations]
        shown = functools.partial(_show_ranks, progress, lplan, allocations, status_dir)
        tick = shown if allocations or req.slurm_job else None
        if lplan.zip is not None:
            launchers, forwarders = site_processes(
                lplan, impl, netname, layer_env, argv, status_dir, jobs
            )
            cmd = launchers[0].cmd
            rc, stopped = launch_all(launchers, forwarders, timeout, alive, out, on_timeout, tick)
            forwarded = profile_forwarders.merged(
                profile_forwarders.read_stats(forwarders_stats(status_dir)), dilation.factor
            )
        else:
            (site,) = lplan.sites
            cmd = site_command(
                site, impl, netname, sorted(layer_env), argv, status_dir, jobs.get(site.name)
            )
            env = {**os.environ, **layer_env}
            rc, stopped = launch(cmd, env, timeout, alive, out, on_timeout, tick)
    progress.end()
    wall = time.monotonic() - started
    wide_area = _wide_area(netname) if emulate else ()
    if rc != 0 and stopped is None and alive is not None and not alive():
        # the router died and a rank noticed before isthmus did: the router is the cause
        rc, stopped = EXIT_NETWORK_FAILED, "network"
    # A forwarder killed is the cause: the ranks' failures follow from it (one that exits
    # 1 does so because a rank went first, and that rank is the cause).
    forwarder_failed = (
        stopped is not None
        and stopped.startswith("the forwarder")
        and "killed by signal" in stopped
    )
    failure = None
    if (
        rc != 0
        and not forwarder_failed
        and stopped not in ("timeout", "network", *signals.STOPPING_NAMES)
    ):
        failure = first_failure(status_dir)
        rc = failure.code if failure is not None else rc
    return Outcome(rc, stopped, failure, cmd, wall, forwarded, batch, started_unix, wide_area)


def _layer_environment(
    req: RunRequest,
    impl: mpi.MpiImplementation,
    nranks: int,
    profile: Path | None,
    netname: str,
    emulate: bool,
    dilation: scale.Dilation,
    status_dir: Path,
    site_env: dict[str, str],
) -> dict[str, str]:
    """What every rank's layer reads (and, emulated, what confines the MPI to the
    emulated network)."""
    env = layer_environment(req.platform, impl, profile)
    env["ISTHMUS_STATUS_DIR"] = str(status_dir)
    env.update(collective_environment(req.platform, status_dir))
    cores = os.cpu_count() or 1
    env["ISTHMUS_WAIT"] = wait_mode(req.platform, impl, nranks, cores, dilation.factor)
    env.update(pio_environment(req.platform, nranks))
    env.update(site_env)
    env.update(dict(req.environment))
    if emulate:
        env["ISTHMUS_NETNS"] = ",".join(rank_namespaces(req.platform, netname))
        if dilation.active:
            st_now = net.load_state(netname)
            # through our root: `ip netns exec` gives the launcher a /sys of its own,
            # without the cgroup file systems
            cgroups = st_now.cgroups if st_now else ""
            env["ISTHMUS_CGROUPS"] = f"/proc/{os.getpid()}/root{cgroups}"
            # virtual time equals real time at this instant, in every rank
            env["ISTHMUS_DILATION"] = f"{dilation.factor:.9g}:{time.monotonic_ns()}"
        env.update(mpi.emulation_environment(impl))
    return env


def _say_how_it_ended(req: RunRequest, o: Outcome, netname: str, dilation: scale.Dilation) -> None:
    if o.stopped == "timeout":
        assert req.timeout is not None
        real = req.timeout * dilation.factor
        scaled = f" ({real:g}s real at dilation {dilation.factor:g})" if dilation.active else ""
        print(
            f"isthmus: the run exceeded --timeout {req.timeout:g}s{scaled} and was stopped",
            file=sys.stderr,
        )
    elif o.stopped == "network":
        print(
            f"isthmus: the router of network {netname} died during the run; the run was stopped",
            file=sys.stderr,
        )
    elif o.stopped in signals.STOPPING_NAMES:
        print(f"isthmus: stopped by {o.stopped}: the job was stopped", file=sys.stderr)
    elif o.stopped is not None:
        print(f"isthmus: {o.stopped}; the other sites' jobs were stopped", file=sys.stderr)
    if o.failure is not None:
        print(
            f"isthmus: {o.failure.describe(netns_name(netname, ''))}: the job's status is {o.rc}",
            file=sys.stderr,
        )


def run(req: RunRequest) -> int:
    """Plan the run once (its sites, their ranks and launchers), bring the network up if
    the run needs its own, carry the plan out, say how it ended, complete the profile."""
    if not req.app:
        raise UserError("no application given: isthmus run -p PLATFORM -- APP [ARGS...]")
    impl = mpi.choose(req.mpi, req.app[0])
    nranks, site_env = _site_environment(req)
    emulate = req.emulate and req.platform.emulated
    if req.slurm_job is not None and emulate:
        raise UserError(
            "--slurm-job: on real sites only (an emulated platform's Slurm clusters say "
            'launcher = "slurm": docs/slurm.md)'
        )
    # the plan, built once: its refusals come first
    lplan = launch_plan.make(req.platform, nranks, emulate, req.slurm_job)
    profile = _profile_path(req)
    netname = req.net or f"run{os.getpid()}"
    own_network = emulate and not (req.net and net.is_up(req.net))
    dilation = _dilation(req, emulate, own_network)
    if own_network and os.geteuid() != 0:
        if dilation.active:
            scale.require_writable()  # refused with the reason: cgroups need root
        rootless.reexec()  # does not return: the run continues inside a user namespace
    _say_time_model(req, dilation, emulate, nranks, os.cpu_count() or 1)
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
        with tempfile.TemporaryDirectory(prefix="isthmus-status-") as tmp:
            status_dir = Path(tmp)
            layer_env = _layer_environment(
                req, impl, nranks, profile, netname, emulate, dilation, status_dir, site_env
            )
            outcome = _carry_out(
                req, impl, lplan, layer_env, netname, emulate, dilation, status_dir
            )
    finally:
        if own_network:
            with signals.deferred():
                net.down(netname)
    _say_how_it_ended(req, outcome, netname, dilation)
    if profile is not None:
        if profile.exists():
            info = run_record.describe(req, impl.name, nranks, outcome, dilation)
            run_record.annotate_profile(profile, info, outcome.forwarded)
        else:
            print(
                f"isthmus: no profile was written to {profile}: the application did not "
                "reach MPI_Finalize",
                file=sys.stderr,
            )
    return outcome.rc
