"""`isthmus experiment list|run|render`: the project's measurements."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from isthmus.cli.common import group


def cmd_experiment_list(args: argparse.Namespace) -> int:
    from isthmus import experiment

    t = Table(title="experiments (experiments/<area>/<name>.toml)")
    for col in ("name", "kind", "steps", "about", "what"):
        t.add_column(col, justify="right" if col in ("steps", "about") else "left")
    for name, kind, title, steps, minutes in experiment.listing():
        t.add_row(name, kind, str(steps), f"{minutes:g} min", title)
    Console(width=max(Console().width, 140)).print(t)
    return 0


def cmd_experiment_run(args: argparse.Namespace) -> int:
    from isthmus import experiment

    out = Path(args.output) if args.output else None
    for name in args.names:
        experiment.run(name, args.quick, out, args.allow_dirty, args.fresh)
    return 0


def cmd_experiment_render(args: argparse.Namespace) -> int:
    from isthmus.report import render

    problems = render.render(check=args.check)
    for p in problems:
        print(f"isthmus: {p}", file=sys.stderr)
    if args.check:
        print("render --check: " + (f"{len(problems)} problems" if problems else "ok"))
    return 1 if problems else 0


def add(sub: Any) -> None:
    """The experiment command(s) on the top-level subparsers."""
    xsub = group(sub, "experiment", "the project's measurements: list, run, render")
    sp = xsub.add_parser("list", help="the experiments and how long each takes")
    sp.set_defaults(func=cmd_experiment_list)
    sp = xsub.add_parser(
        "run", help="run (or resume) experiments; write results/<area>/<name>.json"
    )
    sp.add_argument("names", nargs="+", metavar="NAME", help="area/name, as 'list' shows")
    sp.add_argument("--quick", action="store_true", help="a small version, to check it runs")
    sp.add_argument("-o", "--output", metavar="DIR", help="results folder (default: results/)")
    sp.add_argument("--allow-dirty", action="store_true", help="run with uncommitted code")
    sp.add_argument("--fresh", action="store_true", help="discard the steps of an earlier run")
    sp.set_defaults(func=cmd_experiment_run)
    sp = xsub.add_parser("render", help="write the tables and plots from the results files")
    sp.add_argument("--check", action="store_true", help="change nothing; fail on any difference")
    sp.set_defaults(func=cmd_experiment_render)
