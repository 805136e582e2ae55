"""Reading a profile written by libisthmus (docs/profile.md) and presenting it.

`show` prints what mpiP's report gives (time per rank, time and calls per function), the
size-bucket tables of the NetPIPE/NPB paper (calls per power-of-two message size per
function), and where the bytes went: intra- vs inter-cluster, per cluster pair, and the
busiest rank pairs. `plot` draws the communication matrices with cluster boundaries.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from isthmus import records
from isthmus.config.units import format_size
from isthmus.errors import UserError
from isthmus.profile import adaptation, discovery, forwarders, io

SCHEMA = "isthmus-profile"
VERSION = 1
# Groups whose calls carry messages (the others: init, sync, comm).
DATA_GROUPS = ("p2p", "persist", "coll", "icoll", "rma")
KINDS = {"p2p": "point-to-point", "coll": "collective (logical, from call arguments)"}


@dataclass(frozen=True)
class CallRow:
    rank: int
    function: str
    bucket_low: int
    calls: int
    bytes: int
    seconds: float


@dataclass(frozen=True)
class FunctionSummary:
    name: str
    group: str
    calls: int
    bytes: int
    seconds: float
    rank_seconds: list[float]


@dataclass(frozen=True)
class CallSite:
    function: str
    where: str  # "function at file:line" (addr2line), or the object and address
    calls: int
    wan_aware_calls: int
    seconds: float  # over all ranks


def where_in_source(sites: list[tuple[str, str, int]]) -> dict[tuple[str, str, int], str]:
    """Each (function, object, return address)'s caller as addr2line names it from the
    object's debugging information (the address of the call: one byte before the return
    address), else the object's name and the address."""
    out = {s: f"{os.path.basename(s[1])} +{s[2]:#x}" for s in sites}
    tool = shutil.which("addr2line")
    by_object: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    for s in sites:
        by_object[s[1]].append(s)
    for obj, mine in by_object.items():
        if not tool or not os.path.isfile(obj):
            continue
        args = [tool, "-e", obj, "-f", "-C", "-p", *(f"{s[2] - 1:#x}" for s in mine)]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        lines = done.stdout.splitlines()
        if done.returncode != 0 or len(lines) != len(mine):
            continue
        for s, line in zip(mine, lines, strict=True):
            # "main at /path/pattern.c:50 (discriminator 1)", "main at ??:?", "?? ??:0"
            func, at, place = line.partition(" at ")
            if at and not place.startswith("??"):
                out[s] = f"{func} at {os.path.basename(place.split(' ')[0])}"
            elif at and func != "??":
                out[s] = f"{func} ({out[s]})"
    return out


class Profile:
    def __init__(self, data: dict[str, Any], path: Path) -> None:
        self.data = data
        self.path = path
        self.nranks: int = data["nranks"]
        self.clusters: list[str] = data["clusters"]
        self.rank_cluster: list[int] = [r["cluster"] for r in data["ranks"]]
        self.groups: dict[str, str] = data["functions"]
        self.rows = [CallRow(*row) for row in data["calls"]["rows"]]

    def functions(self) -> list[FunctionSummary]:
        """Totals per function over all ranks, most time first (lifecycle calls excluded)."""
        acc: dict[str, list[Any]] = {}
        for r in self.rows:
            if self.groups.get(r.function) == "init":
                continue
            a = acc.setdefault(r.function, [0, 0, 0.0, [0.0] * self.nranks])
            a[0] += r.calls
            a[1] += r.bytes
            a[2] += r.seconds
            a[3][r.rank] += r.seconds
        out = [
            FunctionSummary(n, self.groups.get(n, "?"), a[0], a[1], a[2], a[3])
            for n, a in acc.items()
        ]
        return sorted(out, key=lambda f: -f.seconds)

    def size_buckets(self) -> list[tuple[int, str, int, int]]:
        """(bucket low bound, function, calls over all ranks, bytes) for calls that carry data."""
        acc: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])
        for r in self.rows:
            if self.groups.get(r.function) not in DATA_GROUPS:
                continue
            acc[(r.bucket_low, r.function)][0] += r.calls
            acc[(r.bucket_low, r.function)][1] += r.bytes
        return sorted(((b, f, c, n) for (b, f), (c, n) in acc.items()), key=lambda t: (t[1], t[0]))

    def calls_per_function(self) -> dict[str, int]:
        """Calls of each function, counted once per call: the most any rank made."""
        per_rank: dict[tuple[str, int], int] = defaultdict(int)
        for r in self.rows:
            per_rank[(r.function, r.rank)] += r.calls
        out: dict[str, int] = defaultdict(int)
        for (fn, _rank), c in per_rank.items():
            out[fn] = max(out[fn], c)
        return dict(out)

    def wan(self) -> list[tuple[str, int, int, int]]:
        """(function, calls, messages, bytes) that libisthmus's WAN-aware collectives sent
        across wide-area links, summed over ranks; calls are counted once per call (the
        most any rank made), by function name."""
        calls: dict[str, int] = defaultdict(int)
        msgs: dict[str, int] = defaultdict(int)
        nbytes: dict[str, int] = defaultdict(int)
        for _rank, fn, c, m, b in self.data.get("wan", {}).get("rows", []):
            calls[fn] = max(calls[fn], c)
            msgs[fn] += m
            nbytes[fn] += b
        return sorted((fn, calls[fn], msgs[fn], nbytes[fn]) for fn in calls)

    def sites(self) -> list[CallSite]:
        """The collectives' call sites, summed over ranks, most time first; calls counted
        once per call (the most any rank made there)."""
        acc: dict[tuple[str, str, int], list[Any]] = {}
        for _rank, fn, obj, address, calls, wan_calls, seconds in self.data.get("sites", {}).get(
            "rows", []
        ):
            a = acc.setdefault((fn, obj, address), [0, 0, 0.0])
            a[0] = max(a[0], calls)
            a[1] = max(a[1], wan_calls)
            a[2] += seconds
        names = where_in_source(list(acc))
        out = [CallSite(fn, names[(fn, o, a)], c, w, s) for (fn, o, a), (c, w, s) in acc.items()]
        return sorted(out, key=lambda x: -x.seconds)

    def traffic(self, kind: str) -> dict[str, Any]:
        result: dict[str, Any] = self.data["traffic"][kind]
        return result


def load(path: str | Path) -> Profile:
    path = Path(path)
    data = records.read_json(path, what="isthmus profile")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise UserError(f'{path}: not an isthmus profile (expected "schema": "{SCHEMA}")')
    if data.get("version") != VERSION:
        raise UserError(
            f"{path}: profile version {data.get('version')!r}; this isthmus reads version {VERSION}"
        )
    try:
        return Profile(data, path)
    except (KeyError, TypeError, IndexError) as e:
        raise UserError(f"{path}: incomplete profile: missing or malformed {e}") from None


def _bucket_label(low: int) -> str:
    if low == 0:
        return "0"
    return f"{format_size(low)} - <{format_size(2 * low)}"


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}" if whole > 0 else "-"


def show(p: Profile, console: Console) -> None:
    d = p.data
    run = d.get("run", {})
    console.print(f"[bold]isthmus profile[/bold] {p.path}")
    console.print(f"MPI: {d['mpi']['library']}")
    console.print(f"ranks: {p.nranks} in clusters {', '.join(p.clusters)}; created {d['created']}")
    if run:
        console.print(
            f"app: {' '.join(run.get('app', []))}   platform: {run['platform']['name']}"
            f"   exit code: {run.get('exit_code')}   git: {run.get('git_revision')}"
        )

    discovery.show(d, console)
    adaptation.show(d, console)

    ranks = Table(title="Time per rank (application time: MPI_Init to MPI_Finalize)")
    for col in ("rank", "cluster", "host", "app s", "MPI s", "MPI %"):
        ranks.add_column(col, justify="right" if col not in ("cluster", "host") else "left")
    for r in d["ranks"]:
        ranks.add_row(
            str(r["rank"]),
            p.clusters[r["cluster"]],
            r["host"],
            f"{r['app_seconds']:.6f}",
            f"{r['mpi_seconds']:.6f}",
            _pct(r["mpi_seconds"], r["app_seconds"]),
        )
    console.print(ranks)

    total_mpi = sum(r["mpi_seconds"] for r in d["ranks"])
    total_app = sum(r["app_seconds"] for r in d["ranks"])
    funcs = Table(title="MPI functions, all ranks (by time)")
    for col in (
        "function",
        "group",
        "calls",
        "bytes",
        "time s",
        "% MPI",
        "% app",
        "min rank s",
        "mean rank s",
        "max rank s",
    ):
        funcs.add_column(col, justify="left" if col in ("function", "group") else "right")
    for f in p.functions():
        funcs.add_row(
            f.name,
            f.group,
            str(f.calls),
            format_size(f.bytes),
            f"{f.seconds:.6f}",
            _pct(f.seconds, total_mpi),
            _pct(f.seconds, total_app),
            f"{min(f.rank_seconds):.6f}",
            f"{sum(f.rank_seconds) / p.nranks:.6f}",
            f"{max(f.rank_seconds):.6f}",
        )
    console.print(funcs)

    sizes = Table(title="Calls per message size (power-of-two buckets, all ranks)")
    for col in ("function", "size", "calls", "calls per rank", "bytes"):
        sizes.add_column(col, justify="left" if col == "function" else "right")
    for low, fn, calls, nbytes in p.size_buckets():
        sizes.add_row(
            fn, _bucket_label(low), str(calls), f"{calls / p.nranks:g}", format_size(nbytes)
        )
    console.print(sizes)

    io.show(d, console)

    split = Table(title="Traffic inside clusters and between them")
    for col in ("kind", "intra msgs", "intra bytes", "inter msgs", "inter bytes", "inter % bytes"):
        split.add_column(col, justify="left" if col == "kind" else "right")
    for kind, label in KINDS.items():
        t = p.traffic(kind)
        intra, inter = t["intra"], t["inter"]
        split.add_row(
            label,
            str(intra["messages"]),
            format_size(intra["bytes"]),
            str(inter["messages"]),
            format_size(inter["bytes"]),
            _pct(inter["bytes"], intra["bytes"] + inter["bytes"]),
        )
    console.print(split)

    wan = p.wan()
    if wan:
        wt = Table(title="WAN-aware collectives: what crossed wide-area links (all ranks)")
        every = p.calls_per_function()
        for col in (
            "function",
            "calls",
            "of all its calls",
            "messages",
            "bytes",
            "messages per call",
            "bytes per call",
        ):
            wt.add_column(col, justify="left" if col == "function" else "right")
        for fn, calls, msgs, nbytes in wan:
            wt.add_row(
                fn,
                str(calls),
                str(every.get(fn, calls)),
                str(msgs),
                format_size(nbytes),
                f"{msgs / calls:g}",
                format_size(nbytes // calls),
            )
        console.print(wt)

    sites = p.sites()
    if sites:
        st = Table(title="Collectives per call site (all ranks; the selector's choice per call)")
        for col in ("function", "called from", "calls", "ran the WAN-aware algorithm", "time"):
            st.add_column(col, justify="right" if col in ("calls", "time") else "left")
        for site in sites[:20]:
            st.add_row(
                site.function,
                site.where,
                str(site.calls),
                str(site.wan_aware_calls),
                f"{site.seconds:.3f} s",
            )
        console.print(st)

    for kind, label in KINDS.items():
        cm = Table(title=f"Bytes between clusters, {label} (row: from, column: to)")
        cm.add_column("from \\ to")
        for c in p.clusters:
            cm.add_column(c, justify="right")
        for i, c in enumerate(p.clusters):
            cm.add_row(c, *(format_size(v) for v in p.traffic(kind)["cluster_bytes"][i]))
        console.print(cm)

    pairs = []
    for kind in KINDS:
        t = p.traffic(kind)
        for s in range(p.nranks):
            for dst in range(p.nranks):
                if t["bytes"][s][dst]:
                    pairs.append((t["bytes"][s][dst], t["messages"][s][dst], kind, s, dst))
    top = Table(title="Busiest rank pairs")
    for col in ("kind", "from", "to", "messages", "bytes", "crosses clusters"):
        top.add_column(col, justify="left" if col == "kind" else "right")
    for nbytes, msgs, kind, s, dst in sorted(pairs, reverse=True)[:10]:
        top.add_row(
            kind,
            str(s),
            str(dst),
            str(msgs),
            format_size(nbytes),
            "yes" if p.rank_cluster[s] != p.rank_cluster[dst] else "no",
        )
    console.print(top)

    forwarders.show(d, console)
