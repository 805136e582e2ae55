"""`isthmus sweep` (applications over a matrix of links, MPIs and collectives) and `isthmus
report` (its HTML page)."""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from pathlib import Path
from typing import Any

from isthmus.cli.common import dilate_option, output_path, set_option, timeout_option
from isthmus.config import platform as platform_mod
from isthmus.errors import UserError


def cmd_sweep(args: argparse.Namespace) -> int:
    from isthmus import sweep as sweep_mod
    from isthmus.sweep import spec as sweep_spec

    out = Path(args.output)
    if args.file:
        if args.platform or args.args:
            raise UserError("give either a sweep file or -p PLATFORM -- APP, not both")
        s = sweep_spec.load_file(Path(args.file))
    else:
        if not args.platform or not args.args:
            raise UserError("a sweep needs a sweep file or -p PLATFORM and an application after --")
        app = sweep_spec.App(
            name=args.name or Path(args.args[0]).name,
            argv=tuple(args.args),
            figures=tuple(sweep_spec.parse_figure(f) for f in args.figure),
        )
        s = sweep_spec.Sweep(
            platform=Path(args.platform).resolve(),
            apps=(app,),
            overrides=tuple(args.set),
            vary=tuple(sweep_spec.parse_vary(v) for v in args.vary),
            mpis=sweep_spec.parse_list(args.mpi, sweep_spec.MPIS, "--mpi"),
            colls=sweep_spec.parse_list(args.coll, platform_mod.COLLECTIVES_MODES, "--coll"),
            repeat=args.repeat,
            timeout=timeout_option(args.timeout) or 600.0,
            baseline=not args.no_baseline,
        )
    return sweep_mod.run_sweep(s, out)


def cmd_report(args: argparse.Namespace) -> int:
    from isthmus.report import html as report

    out_dir = Path(args.dir)
    page = output_path(args.output) if args.output else out_dir / "report.html"
    also = [Path(d) for d in args.also or []]
    report.write(out_dir, page, " ".join(["isthmus", "report", *sys.argv[2:]]), also)
    print(f"wrote {page}")
    if args.open:
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            print(
                f"no display here (DISPLAY and WAYLAND_DISPLAY are unset): open {page} in a browser"
            )
        elif webbrowser.open(page.resolve().as_uri()):
            print(f"opened {page} in the web browser")
        else:
            print(f"no web browser found: open {page} yourself")
    return 0


def add(sub: Any) -> None:
    """The sweep command(s) on the top-level subparsers."""
    sw = sub.add_parser(
        "sweep",
        help="run applications over a matrix of WAN settings, MPIs and collectives",
        usage="isthmus sweep -p PLATFORM [--vary KEY=V1,V2...]... [--mpi openmpi,mpich] "
        "[--coll native,isthmus] [--repeat N] [-o DIR] -- APP [ARGS...]\n"
        "       isthmus sweep SWEEP.toml [-o DIR]",
    )
    sw.add_argument("file", nargs="?", help="a sweep file (docs/sweep.md) instead of options")
    sw.add_argument("-p", "--platform", help="platform file (TOML)")
    set_option(sw)
    dilate_option(sw)
    sw.add_argument(
        "--vary", action="append", default=[], metavar="KEY=V1,V2", help="repeatable: a product"
    )
    sw.add_argument("--mpi", default="openmpi", help="openmpi, mpich or both, comma-separated")
    sw.add_argument("--coll", default="native", help="native, isthmus or both, comma-separated")
    sw.add_argument("--repeat", type=int, default=1, help="runs per point (default 1)")
    sw.add_argument("--timeout", metavar="DURATION", help="per point (default 10min)")
    sw.add_argument(
        "--figure",
        action="append",
        default=[],
        metavar="NAME=REGEX",
        help="a number the app prints, e.g. 'Mops=Mop/s total\\s*=\\s*([0-9.]+)'",
    )
    sw.add_argument("--name", help="the application's name in the results (default: its file)")
    sw.add_argument(
        "--no-baseline", action="store_true", help="skip the one-cluster run of the same ranks"
    )
    sw.add_argument("-o", "--output", default="sweep-out", metavar="DIR")
    sw.set_defaults(func=cmd_sweep, args=[])

    rep = sub.add_parser("report", help="an HTML page with plots from a sweep's results")
    rep.add_argument("dir", metavar="DIR", help="the sweep's output directory")
    rep.add_argument("-o", "--output", metavar="HTML", help="default: DIR/report.html")
    rep.add_argument(
        "--also",
        action="append",
        metavar="DIR",
        help="another sweep's results, as further sections of the same page (the demo's "
        "zipper sweep)",
    )
    rep.add_argument(
        "--open", action="store_true", help="open it in a browser, if a display exists"
    )
    rep.set_defaults(func=cmd_report)
