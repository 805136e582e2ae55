"""`isthmus platform check|show|export`: a platform file checked, summarized, exported."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from isthmus.cli.common import group, link_text, output_path, set_option
from isthmus.config import platform as platform_mod
from isthmus.config.units import (
    format_size,
)
from isthmus.records import atomic


def cmd_platform_check(args: argparse.Namespace) -> int:
    p = platform_mod.load(args.file, args.set)
    print(f"{args.file}: ok ({len(p.clusters)} clusters, {p.total_ranks} ranks)")
    return 0


def cmd_platform_export(args: argparse.Namespace) -> int:
    from isthmus.model import simgrid

    p = platform_mod.load(args.file, args.set)
    xml, hosts = simgrid.export(p), simgrid.hostfile(p)
    if args.output:
        out = output_path(args.output)
        atomic.write_text(out, xml)
        print(f"wrote {out}")
    else:
        sys.stdout.write(xml)
    if args.hostfile:
        hf = output_path(args.hostfile)
        atomic.write_text(hf, hosts)
        print(f"wrote {hf}", file=sys.stderr if not args.output else sys.stdout)
    return 0


def _rank_span(ranks: list[int]) -> str:
    """0-3 for consecutive ranks, 0,2,4 otherwise."""
    if ranks and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ",".join(map(str, ranks))


def cmd_platform_show(args: argparse.Namespace) -> int:
    p = platform_mod.load(args.file, args.set)
    console = Console()
    console.print(
        f"[bold]{p.name}[/bold] ({p.path}){': ' + p.description if p.description else ''}"
    )
    clusters = Table(title="Clusters")
    for col in ("cluster", "hosts", "ranks/host", "ranks", "world ranks", "LAN", "uplink"):
        clusters.add_column(col)
    placed = p.rank_clusters()
    for c in p.clusters:
        mine = [r for r, name in enumerate(placed) if name == c.name]
        span = _rank_span(mine) if c.ranks else ", ".join(c.host_patterns)
        lan = link_text(c.lan) if c.lan_emulated else "not emulated"
        clusters.add_row(
            c.name,
            str(c.hosts) if c.hosts else "by pattern",
            str(c.ranks_per_host),
            str(c.ranks) if c.ranks else "-n",
            span,
            lan,
            link_text(c.uplink) if c.uplink else "-",
        )
    if p.clusters:
        console.print(clusters)
    else:
        console.print("clusters: none given; the layer finds them at MPI_Init by measuring "
                      "round trips (layer.clusters = \"auto\"); -n gives the ranks")  # fmt: skip
    if p.wan:
        links = Table(title="Wide-area links (one direction each)")
        links.add_column("from")
        links.add_column("to")
        links.add_column("model")
        for (a, b), m in p.wan.items():
            links.add_row(a, b, link_text(m))
        console.print(links)
    for z in p.zippers:
        console.print(
            f"zipper {z.name}: joins {', '.join(z.clusters)}; {z.hosts} host(s) x "
            f"{z.ranks_per_host} rank(s)" + (f"; {link_text(z.link)}" if z.link else "")
        )
    if p.io:
        console.print(
            f"I/O: {p.io.servers} server(s), {p.io.cluster or 'the last ranks'}, "
            f"stripe {format_size(p.io.stripe)}, directory {p.io.directory}"
        )
    console.print(
        f"layer: collectives {p.layer.collectives}, wait {p.layer.wait}, "
        f"placement {p.layer.placement}, "
        f"profile {'on' if p.layer.profile else 'off'}"
    )
    if p.emulated:
        from isthmus.emulate import dilation  # here: only emulated platforms need it

        d = dilation.resolve(p)
        cores = ", ".join(f"{c.name} {c.cores}" for c in p.clusters)
        console.print(f"emulation: time dilation {d.why} (cores per host: {cores})")
    return 0


def add(sub: Any) -> None:
    """The platform command(s) on the top-level subparsers."""
    psub = group(sub, "platform", "check or show a platform file")
    for name, fn, text in (
        ("check", cmd_platform_check, "check a platform file"),
        ("show", cmd_platform_show, "summarize clusters, ranks and links"),
    ):
        sp = psub.add_parser(name, help=text)
        sp.add_argument("file")
        set_option(sp)
        sp.set_defaults(func=fn)
    sp = psub.add_parser("export", help="the platform for another tool (SimGrid)")
    sp.add_argument("--simgrid", action="store_true", required=True, help="SimGrid platform XML")
    sp.add_argument("file")
    set_option(sp)
    sp.add_argument("-o", "--output", metavar="XML", help="write here (default: stdout)")
    sp.add_argument("--hostfile", metavar="FILE", help="also write smpirun's host file")
    sp.set_defaults(func=cmd_platform_export)
