"""The figures the commands draw: a profile's matrices and its HTML page (`isthmus
profile plot|report`), the broadcast model against message size (`isthmus model plot`),
and a pio workload's panels (`isthmus pio bench`). Drawn through plotting.pyplot()."""

from __future__ import annotations

import os
import statistics
import textwrap
from collections import defaultdict
from pathlib import Path

from rich.console import Console

from isthmus.config.units import format_size
from isthmus.errors import UserError
from isthmus.model.bcast import predict_bcast
from isthmus.model.plogp import Params
from isthmus.pio.bench import OPS, STRATEGIES
from isthmus.profile import KINDS, Profile
from isthmus.profile import show as profile_show
from isthmus.records import atomic, read_bench
from isthmus.report.plotting import pyplot


def profile_matrices(p: Profile, out: Path) -> None:
    """Heatmaps of bytes per rank pair, point-to-point and collective, with clusters marked."""
    plt = pyplot()
    import numpy as np
    from matplotlib.colors import LogNorm, Normalize
    from matplotlib.ticker import FuncFormatter, LogLocator, MultipleLocator, NullFormatter

    fig, axes = plt.subplots(1, 2, figsize=(12, 5.4), constrained_layout=True)
    # Cluster boundaries: ranks are contiguous per cluster under block mapping; draw a line
    # wherever the cluster changes between consecutive ranks.
    edges = [i for i in range(1, p.nranks) if p.rank_cluster[i] != p.rank_cluster[i - 1]]
    starts = [0, *edges]
    ends = [*edges, p.nranks]
    for ax, (kind, label) in zip(axes, KINDS.items(), strict=True):
        m = np.array(p.traffic(kind)["bytes"], dtype=float)
        positive = m[m > 0]
        if positive.size:
            low, high = max(positive.min(), 1.0), max(positive.max(), 2.0)
            # Log scale only where the values span a decade: over a narrower range its ticks
            # collapse to one repeated label.
            wide = high / low >= 10
            norm = LogNorm(vmin=low, vmax=high) if wide else Normalize(vmin=0, vmax=high)
            img = ax.imshow(
                np.where(m > 0, m, np.nan), cmap="viridis", norm=norm, interpolation="nearest"
            )
            bar = fig.colorbar(img, ax=ax, label="bytes sent" + (" (log scale)" if wide else ""))
            if wide:
                bar.ax.yaxis.set_major_locator(LogLocator(base=10))
                bar.ax.yaxis.set_minor_formatter(NullFormatter())
            else:  # ticks at multiples of a power of two: 64KiB, 128KiB, not 97.7KiB
                bar.ax.yaxis.set_major_locator(MultipleLocator(2 ** max(int(np.log2(high / 4)), 0)))
            bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_size(v)))
        else:
            ax.imshow(np.zeros_like(m), cmap="Greys", vmin=0, vmax=1)
            ax.text(p.nranks / 2 - 0.5, p.nranks / 2 - 0.5, "no traffic", ha="center", va="center")
        for e in edges:
            ax.axhline(e - 0.5, color="red", lw=1.5)
            ax.axvline(e - 0.5, color="red", lw=1.5)
        centers = [(a + b - 1) / 2 for a, b in zip(starts, ends, strict=True)]
        names = [p.clusters[p.rank_cluster[a]] for a in starts]
        ax.set_xticks(centers, names)
        ax.set_yticks(centers, names, rotation=90, va="center")
        ax.set_xlabel("receiving rank (grouped by cluster)")
        ax.set_ylabel("sending rank")
        inter = p.traffic(kind)["inter"]["bytes"]
        total = inter + p.traffic(kind)["intra"]["bytes"]
        ax.set_title(
            f"{label}\ninter-cluster: {format_size(inter)} of {format_size(total)}", fontsize=10
        )
    run = p.data.get("run", {})
    argv = list(run.get("app", [])) if run else []
    app = " ".join([Path(argv[0]).name, *argv[1:]]) if argv else ""
    title = f"Bytes per rank pair ({p.nranks} ranks, {p.data['mpi']['implementation']}): {app}"
    fig.suptitle(textwrap.shorten(title, 110, placeholder=" ..."))
    tmp = out.with_name(out.name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(out)


def profile_page(p: Profile, out: Path) -> None:
    """One self-contained HTML page: the tables of `show` and the matrix heatmaps."""
    import base64
    import html
    import tempfile

    console = Console(record=True, width=130, file=open(os.devnull, "w"))  # noqa: SIM115
    profile_show(p, console)
    tables = console.export_html(
        inline_styles=True, code_format='<pre style="font-size:13px">{code}</pre>'
    )
    with tempfile.TemporaryDirectory() as d:
        png = Path(d) / "matrix.png"
        profile_matrices(p, png)
        image = base64.b64encode(png.read_bytes()).decode()
    run = p.data.get("run", {})
    title = f"isthmus profile: {' '.join(run.get('app', [])) or p.path.name}"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1300px}}
img{{max-width:100%}}</style></head>
<body><h1>{html.escape(title)}</h1>
<p>Made by <code>isthmus profile report {html.escape(str(p.path))}</code> from a profile of
{p.nranks} ranks ({html.escape(p.data["mpi"]["library"])}).</p>
<h2>Communication matrices</h2>
<img alt="bytes per rank pair" src="data:image/png;base64,{image}">
<h2>Tables</h2>
{tables}
</body></html>
"""
    atomic.write_text(out, page)


def bcast_model(
    params: Params, clusters: list[int], sizes: list[int], title: str, out: Path
) -> None:
    plt = pyplot()

    series: dict[str, list[float]] = {}
    for m in sizes:
        for p in predict_bcast(params, clusters, m):
            series.setdefault(p.name, []).append(p.shape.time / 1e3)
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for name, times in series.items():
        ax.plot(sizes, times, marker="o", markersize=3, label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size M (bytes)")
    ax.set_ylabel("predicted completion time (ms)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    tmp = out.with_name(out.stem + ".tmp" + out.suffix)
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(out)


def pio_workload(jsonl: Path, png: Path, peak: dict[str, float | None] | None = None) -> None:
    """The paper's figures for one workload: a panel per operation."""
    plt = pyplot()

    header, records = read_bench(jsonl)
    recs = [r for r in records if r.get("record") == "pio"]
    if not recs:
        raise UserError(f"{jsonl}: no pio records")
    btio = recs[0]["workload"] == "btio"
    value = "seconds" if btio else "mb_s"
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, op in zip(axes, OPS, strict=True):
        for s in STRATEGIES:
            points: dict[int, list[float]] = defaultdict(list)
            for r in recs:
                if r["op"] == op and r["method"] == "pio" and r["strategy"] == s:
                    points[r["block"]].append(r[value])
            if not points:
                continue
            xs = sorted(points)
            med = [statistics.median(points[x]) for x in xs]
            lo = [m - min(points[x]) for m, x in zip(med, xs, strict=True)]
            hi = [max(points[x]) - m for m, x in zip(med, xs, strict=True)]
            ax.errorbar(xs, med, yerr=[lo, hi], marker="o", ms=3, capsize=2, label=f"{s}-IOS")
        # The curves set the scale; a reference line far above them is named, not drawn.
        top = max(r[value] for r in recs if r["op"] == op and r["method"] == "pio") * 1.3
        refs = [
            (f"servers' raw ({'local file' if btio else 'local file, page cache'})", "raw", "--"),
            ("MPI-IO (ROMIO, local file)", "mpiio", ":"),
            ("MPI-IO (ROMIO, the servers aggregate)", "mpiio-servers", "-."),
        ]
        off = []
        for label, method, style in refs:
            vals = [r[value] for r in recs if r["op"] == op and r["method"] == method]
            if not vals:
                continue
            v = statistics.median(vals)
            if btio or v <= 1.5 * top:
                ax.axhline(v, color="k", ls=style, lw=1, label=label)
                top = max(top, v * 1.1)
            else:
                off.append(f"{label}: {v:.0f} MB/s")
        bound = (peak or {}).get(op)
        if bound and not btio:
            ax.axhline(bound, color="tab:gray", ls="-.", lw=1, label="network peak")
            top = max(top, bound * 1.1)
        if not btio:
            ax.set_ylim(0, top)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("schedule block b (bytes)" + "".join(f"\noff scale: {x}" for x in off))
        ax.set_ylabel("time (s)" if btio else "aggregate throughput (MB/s)")
        ax.set_title(f"{'BTIO-like' if btio else 'contiguous'} {op}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    total = format_size(recs[0]["bytes"])
    fig.suptitle(
        f"pio, platform {header.get('platform')}: {total} per operation, "
        f"{header.get('ranks')} ranks, "
        f"{header.get('mpi_library', '')[:40]}; median and range of the repetitions"
    )
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def pio_workloads(out_dir: Path, peak: dict[str, float | None]) -> None:
    """pio_workload for every workload of a `pio bench` run's directory."""
    for jsonl in sorted(out_dir.glob("*.jsonl")):
        pio_workload(jsonl, jsonl.with_suffix(".png"), peak)
