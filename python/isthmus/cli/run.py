"""`isthmus run` (an application on a platform) and `isthmus forward` (a zipper host's
forwarder)."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path
from typing import Any

from isthmus.cli.common import platform_options, timeout_option
from isthmus.config import paths, placement
from isthmus.config import platform as platform_mod
from isthmus.config import sites as sites_config
from isthmus.errors import UserError
from isthmus.launch import zipper
from isthmus.launch.run import run
from isthmus.launch.run_record import RunRequest
from isthmus.launch.sites import SitesRequest, run_sites


def cmd_run(args: argparse.Namespace) -> int:
    app = list(args.app)
    if app and app[0] == "--":
        app = app[1:]
    timeout = timeout_option(args.timeout)
    if args.n is not None and args.n < 1:
        raise UserError(f"-n {args.n}: expected a positive number of ranks")
    p = platform_mod.load(args.platform, args.set)
    if args.sites:
        return _run_sites(args, p, app, timeout)
    if args.placement:
        if not p.emulated:
            raise UserError("--placement: only on an emulated platform (it names emulated hosts)")
        p = placement.load(Path(args.placement), p)
    req = RunRequest(
        platform=p,
        app=app,
        nranks=args.n,
        mpi=args.mpi,
        overrides=tuple(args.set),
        profile=Path(args.profile) if args.profile else None,
        timeout=timeout,
        coallocate_timeout=timeout_option(args.coallocate_timeout, "--coallocate-timeout"),
        net=args.net,
        emulate=not args.no_emulation,
        site=args.site,
        site_ranks=tuple(_site_ranks(args.site_ranks)),
        forwarders=tuple(f for f in (args.forwarders or "").split(",") if f),
        slurm_job=_job_id(args.slurm_job),
    )
    return run(req)


def _run_sites(
    args: argparse.Namespace, p: platform_mod.Platform, app: list[str], timeout: float | None
) -> int:
    """isthmus run --sites FILE: one job across real Slurm clusters (docs/sites.md)."""
    if p.emulated:
        raise UserError(
            "--sites: for a platform of real sites (clusters by host_patterns); on the emulated "
            'platform, clusters with launcher = "slurm" are allocated by isthmus run itself'
        )
    if not app:
        raise UserError("no application given: isthmus run -p PLATFORM --sites FILE -- APP")
    here = str(paths.isthmus_command())
    site_file = sites_config.load(Path(args.sites), [c.name for c in p.clusters], here)
    req = SitesRequest(
        p,
        site_file,
        app,
        args.mpi,
        tuple(args.set),
        Path(args.profile).resolve() if args.profile else None,
        timeout,
        timeout_option(args.coallocate_timeout, "--coallocate-timeout") or 120.0,
    )
    return run_sites(req)


def _job_id(text: str | None) -> str | None:
    if text is not None and not text.isdigit():
        raise UserError(f"--slurm-job {text}: expected a Slurm job id, for example 4711")
    return text


def _site_ranks(text: str | None) -> list[tuple[str, int]]:
    """--site-ranks left=64,right=32"""
    out = []
    for item in (text or "").split(","):
        if not item:
            continue
        name, _, count = item.partition("=")
        if not name or not count.isdigit():
            raise UserError(f"--site-ranks {item}: expected NAME=N, for example left=64")
        out.append((name, int(count)))
    return out


def cmd_forward(args: argparse.Namespace) -> int:
    """Run a forwarder on this (dual-homed) host, in the foreground, until the job ends."""
    if args.ranks < 1:
        raise UserError(f"--ranks {args.ranks}: expected the world's number of ranks (1 or more)")
    for spec in args.listen:
        zipper.check_address(spec, "--listen")
    cmd = [str(paths.forwarder()), "--ranks", str(args.ranks), "--name", args.name]
    for spec in args.listen:
        cmd += ["--listen", spec]
    if args.stats:
        stats = Path(args.stats).resolve()
        if not stats.parent.is_dir():
            raise UserError(f"--stats {args.stats}: the directory {stats.parent} does not exist")
        cmd += ["--stats", str(stats)]
    return subprocess.run(cmd).returncode


def add(sub: Any) -> None:
    """The run command(s) on the top-level subparsers."""
    rp = sub.add_parser(
        "run",
        help="run an MPI application on a platform with libisthmus",
        usage="isthmus run -p PLATFORM [options] -- APP [ARGS...]",
    )
    platform_options(rp, dilate=True)
    rp.add_argument("-n", type=int, help="number of ranks (default: the platform's)")
    rp.add_argument(
        "--mpi",
        choices=("openmpi", "mpich"),
        help="MPI implementation (default: the one the application is linked with)",
    )
    rp.add_argument("--profile", metavar="OUT.json", help="profile the run into this file")
    rp.add_argument(
        "--placement",
        metavar="FILE",
        help="the host of every world rank (isthmus profile advise writes one; docs/zipper.md)",
    )
    rp.add_argument(
        "--timeout", metavar="DURATION", help="stop the run after this long (e.g. 10min, 30s)"
    )
    rp.add_argument(
        "--coallocate-timeout",
        metavar="DURATION",
        default="2min",
        help="on Slurm clusters: cancel every site's job when one has not started within "
        "this long (default 2min; docs/slurm.md)",
    )
    rp.add_argument(
        "--net", metavar="NAME", help="use this emulated network if it is up (default: one per run)"
    )
    rp.add_argument(
        "--no-emulation",
        action="store_true",
        help="run on the machine's own transports, without the emulated network",
    )
    rp.add_argument(
        "--site",
        metavar="NAME",
        help="on real sites joined by zipper hosts: run this site's job (docs/zipper.md)",
    )
    rp.add_argument(
        "--site-ranks", metavar="NAME=N,...", help="with --site: every site's number of ranks"
    )
    rp.add_argument(
        "--forwarders",
        metavar="ADDR:PORT,...",
        help="with --site: the forwarders, as this site reaches them",
    )
    rp.add_argument(
        "--sites",
        metavar="FILE",
        help="one job across real Slurm clusters: how to reach each (docs/sites.md)",
    )
    rp.add_argument(
        "--slurm-job",
        metavar="JOBID",
        help="with --site: start this site's ranks with srun in this Slurm job (docs/sites.md)",
    )
    rp.add_argument("app", nargs=argparse.REMAINDER, help="the application and its arguments")
    rp.set_defaults(func=cmd_run)

    fp = sub.add_parser(
        "forward",
        help="run a zipper host's forwarder (real sites; isthmus run starts them when emulating)",
    )
    fp.add_argument(
        "--listen", action="append", required=True, metavar="ADDR:PORT",
        help="an address to accept ranks on: one per network the host joins",
    )  # fmt: skip
    fp.add_argument("--ranks", type=int, required=True, help="the world's number of ranks")
    fp.add_argument("--name", default="forwarder", help="for messages (default: forwarder)")
    fp.add_argument(
        "--stats",
        metavar="OUT.json",
        help="write what it carried here when the job ends (isthmus profile add-forwarders)",
    )
    fp.set_defaults(func=cmd_forward)
