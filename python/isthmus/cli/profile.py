"""`isthmus profile show|plot|report|add-forwarders|advise`: a run's profile read back."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from isthmus import profile as profile_mod
from isthmus.cli.common import group, output_path, platform_options
from isthmus.config import placement
from isthmus.config import platform as platform_mod
from isthmus.config.units import format_size
from isthmus.errors import UserError


def cmd_profile_show(args: argparse.Namespace) -> int:
    profile_mod.show(profile_mod.load(args.file), Console(width=max(Console().width, 120)))
    return 0


def cmd_profile_plot(args: argparse.Namespace) -> int:
    from isthmus.report import figures  # heavy: only for this command

    out = output_path(args.output)
    figures.profile_matrices(profile_mod.load(args.file), out)
    print(f"wrote {out}")
    return 0


def cmd_profile_report(args: argparse.Namespace) -> int:
    from isthmus.report import figures  # heavy: only for this command

    out = output_path(args.output)
    figures.profile_page(profile_mod.load(args.file), out)
    print(f"wrote {out}")
    return 0


def cmd_profile_add_forwarders(args: argparse.Namespace) -> int:
    from isthmus.profile import forwarders  # heavy: only for this command

    profile_mod.load(args.file)  # a profile, or a one-line error
    missing = [s for s in args.stats if not Path(s).exists()]
    if missing:
        raise UserError(f"{', '.join(missing)}: no such file (expected forwarder --stats output)")
    n = forwarders.add_to_profile(Path(args.file), [Path(s) for s in args.stats])
    print(f"added {n} forwarder(s) to {args.file}")
    return 0


def cmd_profile_advise(args: argparse.Namespace) -> int:
    from isthmus.profile import advise  # heavy: only for this command

    prof = profile_mod.load(args.file)
    platform = platform_mod.load(args.platform, args.set)
    if not platform.emulated:
        raise UserError(f"{args.platform}: advise needs an emulated platform (it names hosts)")
    out = output_path(args.output)
    a = advise.advise(prof.data, platform)
    console = Console(width=max(Console().width, 100))
    console.print(f"[bold]placement advice[/bold] for {prof.path} on {platform.name}: {a.method}")
    console.print(
        f"cross-site traffic graph: {a.cover_method}: {len(a.cover)} ranks {a.cover} "
        f"({sum(z.hosts * z.ranks_per_host for z in platform.zippers)} zipper slots)"
    )
    t = Table(title="Bytes that cross a forwarder between two networks (both directions)")
    for col in ("placement", "bytes", "of all cross-site bytes", "ranks on zipper hosts"):
        t.add_column(col, justify="left" if col == "placement" else "right")
    zipper_hosts = {f"{z.name}{i}" for z in platform.zippers for i in range(z.hosts)}
    profiled = advise.profiled_slots(prof.data, platform)
    for label, nbytes, slots in (("profiled", a.before, profiled), ("advised", a.after, a.slots)):
        on = [r for r, s in enumerate(slots) if s.host in zipper_hosts]
        share = f"{100.0 * nbytes / a.total_cross_site:.1f} %" if a.total_cross_site else "-"
        t.add_row(label, format_size(nbytes), share, ", ".join(map(str, on)))
    console.print(t)
    for r in a.moved:
        console.print(f"  rank {r}: {profiled[r].host} ({profiled[r].cluster}) -> "
                      f"{a.slots[r].host} ({a.slots[r].cluster})")  # fmt: skip
    placement.write(
        out, platform, a.slots,
        f"advised from {prof.path.name}: {format_size(a.before)} -> {format_size(a.after)} "
        "crossing a forwarder between networks",
    )  # fmt: skip
    print(f"wrote {out}: isthmus run -p {args.platform} --placement {out} -- ...")
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
    sp = prsub.add_parser(
        "advise",
        help="which ranks to run on the zipper hosts, from the profile's traffic (a placement)",
    )
    sp.add_argument("file")
    platform_options(sp, help="the platform of the profiled run, with ranks on zipper hosts")
    sp.add_argument("-o", "--output", required=True, metavar="PLACEMENT.toml")
    sp.set_defaults(func=cmd_profile_advise)
