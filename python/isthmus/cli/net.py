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
from isthmus.emulate import dilation, leftovers, net, slurm
from isthmus.emulate.plan import DEFAULT_MTU, DEFAULT_NAME, DILATED_MTU, make_plan
from isthmus.errors import UserError


def cmd_net_up(args: argparse.Namespace) -> int:
    p = platform_mod.load(args.platform, args.set)
    st = net.up(p, args.name, args.set, mtu=args.mtu)
    scaled = f", time dilation {st.dilation:g} (CPU caps in {st.cgroups})" if st.cgroups else ""
    print(
        f"network {st.name} is up: {len(st.hosts)} namespaces (ist-{st.name}-*), "
        f"{len(st.links)} links, router pid {st.router_pid}{scaled}"
    )
    for s in slurm.slurm_clusters(p, make_plan(p)):
        conf = slurm.conf_path(net.state_dir(st.name), s.name)
        login = f"nsenter --net=/var/run/netns/ist-{st.name}-{s.login}"
        print(
            f"  Slurm of {s.name}: slurmctld on {s.login}:{s.port}, {len(s.nodes)} nodes idle; "
            f"its commands: {login} env SLURM_CONF={conf} sinfo"
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
            print(f"stray namespaces and cgroups: removed {', '.join(removed)}")
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
    cgroups = [i for i in items if i.startswith(str(dilation.cgroup_root()))]
    daemons = [i for i in items if i.startswith("Slurm")]
    parts = [f"the {router[0]}"] if router else []
    parts += [f"the {daemons[0]}"] if daemons else []
    parts += [f"{len(namespaces)} namespaces"] if namespaces else []
    parts += [f"its CPU cgroups ({cgroups[-1]})"] if cgroups else []
    shown = len(router) + len(daemons) + len(namespaces) + len(cgroups)
    parts += ["its state"] if len(items) > shown else []
    head, last = ", ".join(parts[:-1]), parts[-1]
    return f"removed {head} and {last}" if head else f"removed {last}"


def cmd_net_status(args: argparse.Namespace) -> int:
    data = net.stats(args.name)
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    console = Console(width=max(Console().width, 130))
    k = data.get("dilation", 1)
    scaled = f", dilation {k:g}: virtual time and units" if k != 1 else ""
    links = Table(title=f"Network {args.name}: links (up {data['uptime_s']:.0f} s{scaled})")
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


def _dilate_number(text: str | None) -> float:
    if text is None:
        return 1.0
    try:
        k = float(text)
    except ValueError:
        k = 0.0
    if not 1 <= k <= 1000:
        raise UserError(f"--dilate {text}: expected a number from 1 to 1000")
    return k


def cmd_net_selftest(args: argparse.Namespace) -> int:
    from isthmus.emulate import selftest as net_selftest

    console = Console(stderr=True)
    k = _dilate_number(args.dilate)
    if args.busy < 0 or args.busy > 64:
        raise UserError(f"--busy {args.busy}: expected 0 to 64 spinning processes")
    if args.mpi_job < 0 or args.mpi_job > 64:
        raise UserError(f"--mpi-job {args.mpi_job}: expected 0 to 64 ranks")
    result = net_selftest.measure(
        quick=args.quick,
        progress=lambda s: console.print(f"[dim]{s}[/dim]"),
        dilation=k,
        busy=args.busy,
        router_sched=args.router_sched,
        mpi_job=args.mpi_job,
    )
    if args.json:
        records.write_json(Path(args.json), result)
    virtual = f" (virtual time, dilation {k:g})" if k != 1 else ""
    table = Table(title=f"isthmus net selftest: measured against targets{virtual}")
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
    platform_options(sp, dilate=True)
    sp.add_argument(
        "--mtu",
        type=int,
        default=None,
        help=f"MTU of the emulated devices (default {DEFAULT_MTU}, {DILATED_MTU} when dilated)",
    )
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
    sp.add_argument(
        "--dilate", metavar="K", help="run the network K times slower; figures in virtual time"
    )
    sp.add_argument(
        "--busy", type=int, default=0, metavar="N", help="N spinning processes (nice 19) as load"
    )
    sp.add_argument(
        "--mpi-job", type=int, default=0, metavar="N",
        help="an MPI job of N ranks (8-byte Allreduces, same dilation) running beside it",
    )  # fmt: skip
    sp.add_argument(
        "--router-sched",
        choices=("fifo", "nice"),
        default="nice",
        help="the router's priority: nice -10 (default) or SCHED_FIFO where allowed "
        "(measured: results/net/README.md)",
    )
    sp.set_defaults(func=cmd_net_selftest)
