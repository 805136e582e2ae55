"""`isthmus net up|down|status|set|selftest`: the emulated network by hand."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from isthmus import records
from isthmus.cli.common import group, platform_options
from isthmus.config import platform as platform_mod
from isthmus.config.units import (
    format_duration,
    format_rate,
    format_size,
)
from isthmus.emulate import leftovers, net
from isthmus.emulate.plan import DEFAULT_MTU, DEFAULT_NAME
from isthmus.errors import UserError


def cmd_net_up(args: argparse.Namespace) -> int:
    p = platform_mod.load(args.platform, args.set)
    st = net.up(p, args.name, args.set, mtu=args.mtu)
    print(
        f"network {st.name} is up: {len(st.hosts)} namespaces (ist-{st.name}-*), "
        f"{len(st.links)} links, router pid {st.router_pid}"
    )
    return 0


def cmd_net_down(args: argparse.Namespace) -> int:
    if not args.all:
        removed = net.down(args.name)
        print(f"network {args.name}: " + _removed(removed))
        return 0
    killed = {name: leftovers.killed_owner(name) for name in leftovers.networks()}
    every = leftovers.down_all()
    for name, removed in every.items():
        pid = killed.get(name, 0)
        if not name:
            print(f"stray namespaces: removed {', '.join(removed)}")
        elif pid:
            print(f"network {name}, left by a killed isthmus run (pid {pid}): {_removed(removed)}")
        else:
            print(f"network {name}: " + _removed(removed))
    if not every:
        print("no network to remove")
    return 0


def _removed(items: list[str]) -> str:
    """'removed the router (pid 12), 5 namespaces and its state' or 'nothing to remove'."""
    if not items:
        return "nothing to remove"
    router = [i for i in items if i.startswith("router")]
    namespaces = [i for i in items if i.startswith("ist-")]
    parts = [f"the {router[0]}"] if router else []
    parts += [f"{len(namespaces)} namespaces"] if namespaces else []
    parts += ["its state"] if len(items) > len(router) + len(namespaces) else []
    head, last = ", ".join(parts[:-1]), parts[-1]
    return f"removed {head} and {last}" if head else f"removed {last}"


def cmd_net_status(args: argparse.Namespace) -> int:
    data = net.stats(args.name)
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    console = Console(width=max(Console().width, 130))
    links = Table(title=f"Network {args.name}: links (up {data['uptime_s']:.0f} s)")
    for col in (
        "link",
        "latency",
        "rate",
        "jitter",
        "loss",
        "queue",
        "packets",
        "bytes",
        "queue drops",
        "losses",
        "backlog",
        "max backlog",
    ):
        links.add_column(col, justify="left" if col == "link" else "right")
    for lk in data["links"]:
        links.add_row(
            lk["name"],
            format_duration(lk["latency_ns"] * 1e-9),
            format_rate(lk["rate"]) if lk["rate"] else "unlimited",
            format_duration(lk["jitter_ns"] * 1e-9),
            f"{lk['loss']:g}",
            format_size(lk["queue"]),
            str(lk["packets"]),
            format_size(lk["bytes"]),
            str(lk["queue_drops"]),
            str(lk["losses"]),
            format_size(lk["backlog"]),
            format_size(lk["max_backlog"]),
        )
    console.print(links)
    hosts = Table(title="Hosts")
    for col in (
        "namespace",
        "address",
        "sent packets",
        "sent bytes",
        "received packets",
        "received bytes",
        "unroutable",
    ):
        hosts.add_column(col, justify="left" if col in ("namespace", "address") else "right")
    for h in data["hosts"]:
        hosts.add_row(
            h["netns"],
            h["address"],
            str(h["rx_packets"]),
            format_size(h["rx_bytes"]),
            str(h["tx_packets"]),
            format_size(h["tx_bytes"]),
            str(h["unroutable"]),
        )
    console.print(hosts)
    return 0


def cmd_net_set(args: argparse.Namespace) -> int:
    settings = {}
    for item in args.settings:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"net set: expected key=value, got {item!r} (e.g. latency=2ms)")
        settings[key] = value
    if not settings:
        raise UserError(
            "net set: give at least one key=value (e.g. latency=2ms bandwidth=10Mbit/s)"
        )
    changed = net.set_link(args.name, args.link, settings)
    print(f"set {' '.join(args.settings)} on {', '.join(changed)}")
    return 0


def cmd_net_selftest(args: argparse.Namespace) -> int:
    from isthmus.emulate import selftest as net_selftest

    console = Console(stderr=True)
    result = net_selftest.measure(
        quick=args.quick, progress=lambda s: console.print(f"[dim]{s}[/dim]")
    )
    if args.json:
        records.write_json(Path(args.json), result)
    table = Table(title="isthmus net selftest: measured against targets")
    for col in ("check", "measured", "unit", "target", "result"):
        table.add_column(col, justify="right" if col == "measured" else "left")
    for c in result["checks"]:
        table.add_row(
            c["name"],
            f"{c['measured']:.4g}",
            c["unit"],
            c["target"],
            "[green]ok[/green]" if c["ok"] else "[red]MISSED[/red]",
        )
    Console().print(table)
    return 0 if result["passed"] else 1


def add(sub: Any) -> None:
    """The net command(s) on the top-level subparsers."""
    nsub = group(sub, "net", "the emulated network: namespaces and the router")
    sp = nsub.add_parser("up", help="create the platform's emulated network")
    platform_options(sp)
    sp.add_argument("--mtu", type=int, default=DEFAULT_MTU, help="MTU of the emulated devices")
    sp.set_defaults(func=cmd_net_up)
    sp = nsub.add_parser("down", help="remove a network (idempotent, also after a crash)")
    sp.add_argument(
        "--all", action="store_true", help="remove every network isthmus made on this machine"
    )
    sp.set_defaults(func=cmd_net_down)
    sp = nsub.add_parser("status", help="links, parameters and live counters")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_net_status)
    sp = nsub.add_parser(
        "set",
        help="change links while traffic flows",
        usage="isthmus net set LINK key=value... (LINK: a name or glob, e.g. 'wan:*')",
    )
    sp.add_argument("link")
    sp.add_argument("settings", nargs="*", metavar="key=value")
    sp.set_defaults(func=cmd_net_set)
    for sp in nsub.choices.values():
        sp.add_argument("--name", default=DEFAULT_NAME, help="network name (default: isthmus)")
    sp = nsub.add_parser("selftest", help="measure a fresh emulated network against its targets")
    sp.add_argument("--json", metavar="OUT.json", help="also write every figure to this file")
    sp.add_argument("--quick", action="store_true", help="fewer delays, rates and samples")
    sp.set_defaults(func=cmd_net_selftest)
