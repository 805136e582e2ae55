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
from isthmus.errors import UserError
from isthmus.launch import zipper
from isthmus.launch.run import run
from isthmus.launch.run_record import RunRequest


def cmd_run(args: argparse.Namespace) -> int:
    app = list(args.app)
    if app and app[0] == "--":
        app = app[1:]
    timeout = timeout_option(args.timeout)
    if args.n is not None and args.n < 1:
        raise UserError(f"-n {args.n}: expected a positive number of ranks")
    p = platform_mod.load(args.platform, args.set)
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
    )
    return run(req)


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
