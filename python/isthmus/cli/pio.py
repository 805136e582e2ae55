"""`isthmus pio bench`: pio's benchmark."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from isthmus.cli.common import (
    choice_list,
    group,
    platform_options,
    size_option,
    timeout_option,
)
from isthmus.config import platform as platform_mod
from isthmus.errors import UserError


def cmd_pio_bench(args: argparse.Namespace) -> int:
    from isthmus.pio import bench as pio_bench
    from isthmus.report import figures

    workloads = choice_list("--workloads", args.workloads, pio_bench.WORKLOADS)
    strategies = choice_list("--strategies", args.strategies, pio_bench.STRATEGIES)
    lo, sep, hi = args.blocks.partition(":")
    if not sep:
        raise UserError(f"--blocks {args.blocks}: expected MIN:MAX, e.g. 4KiB:8MiB")
    blocks = [size_option("--blocks", x, 1, 1 << 30) for x in (lo, hi)]
    if blocks[0] > blocks[1]:
        raise UserError(f"--blocks {args.blocks}: expected MIN <= MAX")
    size = size_option("--size", args.size, 1, 1 << 30)
    for option, value in (("--repeat", args.repeat), ("--steps", args.steps)):
        if value < 1:
            raise UserError(f"{option} {value}: expected a positive whole number")
    common = [
        "--blocks", f"{blocks[0]}:{blocks[1]}", "--strategies", ",".join(strategies),
        "--repeat", str(args.repeat),
    ]  # fmt: skip
    program_args = {
        "contiguous": ["--workload", "contiguous", "--size", str(size), *common],
        "btio": ["--workload", "btio", "--class", args.klass, "--steps", str(args.steps), *common],
    }
    out = Path(args.output)
    if not out.parent.is_dir():
        raise UserError(f"-o {out}: the directory {out.parent} does not exist")
    platform = platform_mod.load(args.platform, args.set)
    if "btio" in workloads and platform.io is not None:
        pio_bench.check_btio_clients(platform.total_ranks - platform.io.servers, args.klass)
    req = pio_bench.BenchRequest(
        platform=platform,
        mpi=args.mpi,
        out_dir=out,
        workloads=tuple(workloads),
        program_args=program_args,
        overrides=tuple(args.set),
        timeout=timeout_option(args.timeout),
    )
    rc = pio_bench.run_bench(req)
    if rc == 0:
        figures.pio_workloads(req.out_dir, pio_bench.network_peak(platform))
        print(f"wrote {req.out_dir}/summary.json and the plots beside it")
    return rc


def cmd_pio_export(args: argparse.Namespace) -> int:
    from isthmus.pio import files

    directory, out = Path(args.directory), Path(args.output)
    if not out.parent.is_dir():
        raise UserError(f"{out}: the directory {out.parent} does not exist")
    size = files.export(directory, args.name, out)
    print(f"wrote {out}: {size} bytes of pio file {args.name!r}")
    return 0


def add(sub: Any) -> None:
    """The pio command(s) on the top-level subparsers."""
    psub = group(sub, "pio", "pio, files striped over I/O servers: its benchmark, export")
    sp = psub.add_parser(
        "bench",
        help="the paper's workloads for every strategy and schedule block, with the servers' "
        "raw throughput and MPI-IO measured in the same run",
    )
    platform_options(sp, help="a platform with an [io] table")
    sp.add_argument("--mpi", choices=("openmpi", "mpich"), default="openmpi")
    sp.add_argument("--timeout", metavar="DURATION", help="per workload")
    sp.add_argument("-o", "--output", default="pio-bench", metavar="DIR")
    sp.add_argument("--workloads", default="contiguous,btio", help="contiguous, btio or both")
    sp.add_argument("--size", default="16MiB", help="contiguous: bytes per client")
    sp.add_argument("--class", dest="klass", choices=("S", "W", "A"), default="W", help="btio")
    sp.add_argument("--steps", type=int, default=20, help="btio: time steps (default 20)")
    sp.add_argument("--blocks", default="4KiB:8MiB", help="schedule blocks MIN:MAX, powers of 2")
    sp.add_argument("--strategies", default=",".join(("first", "random", "hash", "window")))
    sp.add_argument("--repeat", type=int, default=3, help="repetitions (default 3)")
    sp.set_defaults(func=cmd_pio_bench)
    ex = psub.add_parser(
        "export",
        help="a pio file written out whole as one ordinary file (for the MPI's own MPI-IO, "
        "HDF5's tools, any program)",
    )
    ex.add_argument("directory", help="the servers' directory (the platform's io.directory)")
    ex.add_argument("name", help="the file's pio name (without pio:)")
    ex.add_argument("-o", "--output", required=True, metavar="FILE")
    ex.set_defaults(func=cmd_pio_export)
