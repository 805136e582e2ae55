"""`isthmus profile show|plot|report|add-forwarders`: a run's profile read back."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from isthmus import profile as profile_mod
from isthmus.cli.common import group, output_path
from isthmus.errors import UserError
from isthmus.profile import forwarders
from isthmus.report import figures


def cmd_profile_show(args: argparse.Namespace) -> int:
    profile_mod.show(profile_mod.load(args.file), Console(width=max(Console().width, 120)))
    return 0


def cmd_profile_plot(args: argparse.Namespace) -> int:
    out = output_path(args.output)
    figures.profile_matrices(profile_mod.load(args.file), out)
    print(f"wrote {out}")
    return 0


def cmd_profile_report(args: argparse.Namespace) -> int:
    out = output_path(args.output)
    figures.profile_page(profile_mod.load(args.file), out)
    print(f"wrote {out}")
    return 0


def cmd_profile_add_forwarders(args: argparse.Namespace) -> int:
    profile_mod.load(args.file)  # a profile, or a one-line error
    missing = [s for s in args.stats if not Path(s).exists()]
    if missing:
        raise UserError(f"{', '.join(missing)}: no such file (expected forwarder --stats output)")
    n = forwarders.add_to_profile(Path(args.file), [Path(s) for s in args.stats])
    print(f"added {n} forwarder(s) to {args.file}")
    return 0


def add(sub: Any) -> None:
    """The profile command(s) on the top-level subparsers."""
    prsub = group(sub, "profile", "read a profile written by a run")
    sp = prsub.add_parser("show", help="print the profile's tables")
    sp.add_argument("file")
    sp.set_defaults(func=cmd_profile_show)
    sp = prsub.add_parser("plot", help="draw the communication matrices")
    sp.add_argument("file")
    sp.add_argument("-o", "--output", required=True, metavar="PNG")
    sp.set_defaults(func=cmd_profile_plot)
    sp = prsub.add_parser("report", help="write the tables and matrices as one HTML page")
    sp.add_argument("file")
    sp.add_argument("-o", "--output", required=True, metavar="HTML")
    sp.set_defaults(func=cmd_profile_report)
    sp = prsub.add_parser(
        "add-forwarders",
        help="merge what forwarders carried (isthmus forward --stats) into a profile (real sites)",
    )
    sp.add_argument("file")
    sp.add_argument("stats", nargs="+", metavar="STATS.json")
    sp.set_defaults(func=cmd_profile_add_forwarders)
