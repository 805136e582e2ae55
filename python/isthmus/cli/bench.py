"""`isthmus bench NAME`: one benchmark program on a platform."""

from __future__ import annotations

import argparse
from typing import Any

from isthmus.cli.common import output_path, platform_options, timeout_option
from isthmus.config import platform as platform_mod


def cmd_bench(args: argparse.Namespace) -> int:
    from isthmus import bench

    extra = list(args.args)
    out = output_path(args.output)
    timeout = timeout_option(args.timeout)
    p = platform_mod.load(args.platform, args.set)
    rc = bench.bench(args.name, p, args.mpi, extra, out, tuple(args.set), args.net, timeout)
    print(f"wrote {out}")
    return rc


def add(sub: Any) -> None:
    """The bench command(s) on the top-level subparsers."""
    bp = sub.add_parser(
        "bench",
        help="run a benchmark program on a platform",
        usage="isthmus bench {pingpong,bw,bibw,coll,logp,bcast} -p PLATFORM [options] "
        "[-- PROGRAM OPTIONS]",
    )
    bp.add_argument("name", help="pingpong, bw, bibw, coll, logp or bcast")
    platform_options(bp, dilate=True)
    bp.add_argument("--mpi", choices=("openmpi", "mpich"), default="openmpi")
    bp.add_argument("--net", metavar="NAME", help="use this emulated network if it is up")
    bp.add_argument("--timeout", metavar="DURATION")
    bp.add_argument("-o", "--output", default="bench.jsonl", metavar="OUT.jsonl")
    bp.set_defaults(func=cmd_bench, args=[])
