"""`isthmus profile show|plot|report`: a run's profile read back."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from isthmus import profile as profile_mod
from isthmus.cli.common import group, output_path
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
