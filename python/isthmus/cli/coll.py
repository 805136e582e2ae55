"""`isthmus coll list|info|explain|tune`: the WAN-aware collectives and their selector."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from isthmus.cli.common import (
    group,
    model_inputs,
    output_path,
    platform_options,
    size_option,
    timeout_option,
)
from isthmus.config.units import (
    format_duration,
    format_size,
)
from isthmus.errors import UserError


def cmd_coll_list(args: argparse.Namespace) -> int:
    from isthmus.config import collectives

    reg = collectives.registry()
    table = Table(title="the WAN-aware collectives (src/coll/registry.toml)", box=None)
    for col in ("collective", "algorithms (native: the MPI's own)", "settings"):
        table.add_column(col)
    for c in reg.collectives.values():
        table.add_row(c.name, ", ".join(c.algorithm_names()), ", ".join(c.settings) or "-")
    Console().print(table)
    return 0


def cmd_coll_info(args: argparse.Namespace) -> int:
    from isthmus.config import collectives

    reg = collectives.registry()
    c = reg.collectives.get(args.collective)
    if c is None:
        raise UserError(f"coll info: {reg.unknown_collective(args.collective)}")
    form = f" (a form of {c.regular}: its algorithms and settings)" if c.regular != c.name else ""
    print(f"{c.name}{form}")
    for a in c.algorithms:
        where = f"{a.file}, {a.function}" if a.function else a.file
        print(f"\n  algorithm {a.name}" + (f"  ({where})" if where else ""))
        print(f"    does: {a.does}")
        print(f"    when: {a.when}")
        if a.cost:
            print(f"    cost: {a.cost}")
    for name in c.settings:
        st = reg.settings[name]
        print(f"\n  setting {name} ({st.kind}, default {st.default}): {st.summary}")
        print(f'    platform: [collectives.{name}] {c.name} = "{st.default}"; '
              f"environment: ISTHMUS_COLL_{name.upper()}={c.name}:{st.default}")  # fmt: skip
    return 0


def cmd_coll_explain(args: argparse.Namespace) -> int:
    from isthmus.coll import explain as coll_explain

    p, params = model_inputs(args)
    sizes = [size_option("SIZE", s, lo=0) for s in args.sizes]
    mpis = coll_explain.MPIS if args.mpi == "both" else (args.mpi,)
    table = Table(
        title=f"{args.collective} on {p.name} ({p.total_ranks} ranks, {p.layer.placement}): "
        f"predicted by the selector's model ({params.source})"
    )
    for col in ("MPI, waiting", "size", "candidate", "predicted", ""):
        table.add_column(col, justify="right" if col in ("size", "predicted") else "left")
    whys = []
    tuning = Path(args.tuning) if args.tuning else p.collectives.tuning
    for mpi in mpis:
        for choice in coll_explain.explain(p, params, mpi, args.collective, sizes, tuning):
            for c in choice.candidates:
                table.add_row(
                    choice.mpi,
                    format_size(choice.bytes),
                    c.name,
                    format_duration(c.predicted_us * 1e-6),
                    "chosen" if c.name == choice.chosen else "",
                )
            table.add_section()
            whys.append(f"{choice.mpi}, {format_size(choice.bytes)}: {choice.why()}")
    Console(width=max(Console().width, 100)).print(table)
    for line in whys:
        print(line)
    return 0


def cmd_coll_tune(args: argparse.Namespace) -> int:
    from isthmus.coll import tune as coll_tune

    out = output_path(args.output)
    rules = coll_tune.tune(
        args.platform, args.set, args.mpi, args.quick, out, timeout_option(args.timeout)
    )
    table = Table(title=f"measured on {args.platform} with {args.mpi}: ours against the MPI's own")
    for col in ("collective", "sizes", "runs", "ours", "MPI's own"):
        table.add_column(col, justify="left" if col in ("collective", "runs") else "right")
    for r in rules:
        table.add_row(
            r.collective,
            f"{format_size(r.first)}-{format_size(r.last)}",
            "ours" if r.ours else "the MPI's own",
            format_duration(r.ours_us * 1e-6),
            format_duration(r.native_us * 1e-6),
        )
    Console(width=max(Console().width, 100)).print(table)
    print(f'wrote {out}; name it in the platform\'s [collectives] tuning = "..."')
    return 0


def add(sub: Any) -> None:
    """The coll command(s) on the top-level subparsers."""
    csub = group(sub, "coll", "the WAN-aware collectives: how the layer chooses")
    sp = csub.add_parser("list", help="every collective with its algorithms and settings")
    sp.set_defaults(func=cmd_coll_list)
    sp = csub.add_parser(
        "info", help="one collective: its algorithms, when each is chosen, its cost, settings"
    )
    sp.add_argument("collective", metavar="COLLECTIVE", help="e.g. allreduce")
    sp.set_defaults(func=cmd_coll_info)
    sp = csub.add_parser(
        "explain",
        help="each candidate's predicted time and the one the layer runs",
        usage="isthmus coll explain -p PLATFORM [--mpi openmpi|mpich|both] "
        "[--params PARAMS] [--set KEY=VALUE] COLLECTIVE SIZE [SIZE...]",
    )
    sp.add_argument("collective", metavar="COLLECTIVE", help="e.g. alltoall, allreduce")
    sp.add_argument("sizes", nargs="+", metavar="SIZE", help="bytes per rank, e.g. 64KiB")
    platform_options(sp)
    sp.add_argument("--params", metavar="PARAMS", help="measured parameters (model fit)")
    sp.add_argument("--mpi", default="both", choices=("openmpi", "mpich", "both"))
    sp.add_argument("--tuning", metavar="FILE", help="measured choices (coll tune), which win")
    sp.set_defaults(func=cmd_coll_explain)
    sp = csub.add_parser(
        "tune",
        help="measure ours against the MPI's own at every size; write a tuning file",
        usage="isthmus coll tune -p PLATFORM --mpi openmpi|mpich [--quick] [--set KEY=VALUE] "
        "-o FILE",
    )
    platform_options(sp)
    sp.add_argument("--mpi", required=True, choices=("openmpi", "mpich"))
    sp.add_argument("--quick", action="store_true", help="3 collectives up to 4 KiB, 3 calls each")
    sp.add_argument("--timeout", default="60min", help="for the whole measurement")
    sp.add_argument("-o", "--output", required=True, metavar="FILE")
    sp.set_defaults(func=cmd_coll_tune)
