"""`isthmus report DIR`: one self-contained HTML page (PNGs inlined, no script needed, CSS
only) from a sweep's results, readable from a phone's width to a wide screen.

It opens with the findings (report/sweep_findings.py: what the wide-area link costs each
application and what the WAN-aware collectives change, every number from the points), then
a table of contents and what they rest on, from DIR/results.json, DIR/sweep.json and the
points' files (docs/sweep.md):
  - application time, WAN slowdown T(RTT)/T(lowest RTT) and "scalability" (the
    one-cluster baseline's time over the point's) against RTT, per MPI and collective
    mode (Figures 8-12): medians over repetitions, bars from the fastest to the slowest;
  - point-to-point bandwidth against message size, a line per round trip, per MPI (the
    first paper's Figures 2-7), from isthmus's pingpong/bw/bibw and from NetPIPE;
  - measured round trips against the configured link's bound 2 (L + m/B), and Bcast
    against the P-LogP model;
  - communication matrices with cluster boundaries, and bytes inside and between clusters;
  - how it was measured: the platform, MPI libraries, revision, machine and commands.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import platform as host_platform
from pathlib import Path
from typing import Any

from isthmus import profile as profile_mod
from isthmus import records
from isthmus.config.units import format_size
from isthmus.errors import UserError
from isthmus.records import atomic
from isthmus.report import figures as command_figures
from isthmus.report import sweep_against, sweep_findings
from isthmus.report.sweep_apps import plot_times
from isthmus.report.sweep_data import SweepResults, load, point_time, rtt_ms
from isthmus.report.sweep_network import plot_bandwidth, plot_bcast_model, plot_rtt_bound


def matrices(res: SweepResults) -> list[tuple[str, str]]:
    """Per app: the profile of the point with the largest round trip, native and isthmus."""
    import tempfile

    figures = []
    chosen: dict[tuple[str, str], dict[str, Any]] = {}
    for row in res.rows:
        if row["baseline"] or row["status"] != "ok" or row["repeat"] != 0:
            continue
        best = chosen.get((row["app"], row["coll"]))
        if best is None or (rtt_ms(row) or 0) > (rtt_ms(best) or 0):
            chosen[(row["app"], row["coll"])] = row
    for (app, coll), row in chosen.items():
        path = res.out / "points" / row["id"] / "profile.json"
        if not path.exists():
            continue
        try:
            p = profile_mod.load(path)
        except UserError:
            continue
        with tempfile.TemporaryDirectory() as d:
            png = Path(d) / "m.png"
            command_figures.profile_matrices(p, png)
            data = base64.b64encode(png.read_bytes()).decode()
        figures.append((f"{app}, {coll} collectives: {row['id']}", data))
    return figures


def traffic_table(res: SweepResults) -> str:
    head = "<tr><th>point</th><th>status</th><th>time (s)</th><th>inside clusters</th>"
    head += "<th>between clusters</th><th>WAN bytes of isthmus collectives</th>"
    forwarded = any(row.get("forwarded_bytes") is not None for row in res.rows)
    head += "<th>forwarded between networks</th></tr>" if forwarded else "</tr>"
    body = []
    for row in res.rows:
        t = point_time(row)
        cells = [
            html.escape(row["id"]),
            html.escape(row["status"]),
            f"{t:.3f}" if t is not None else "-",
            format_size(row["intra_bytes"]) if row.get("intra_bytes") is not None else "-",
            format_size(row["inter_bytes"]) if row.get("inter_bytes") is not None else "-",
            format_size(row["wan_coll_bytes"]) if row.get("wan_coll_bytes") is not None else "-",
        ]
        if forwarded:
            fb = row.get("forwarded_bytes")
            cells.append(format_size(fb) if fb is not None else "-")
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<table>{head}{''.join(body)}</table>"


def _run_info(res: SweepResults) -> tuple[set[str], set[str], set[int]]:
    """The MPI libraries, isthmus revisions and core counts the points' profiles record."""
    libs, revisions, cores = set(), set(), set()
    for row in res.rows:
        path = res.out / "points" / row["id"] / "profile.json"
        if not path.exists():
            continue
        with contextlib.suppress(KeyError, UserError, TypeError):
            data = records.read_json(path)
            libs.add(f"{row['mpi']}: {data['mpi']['library'].strip()}")
            run = data.get("run", {})
            if run.get("git_revision"):
                revisions.add(str(run["git_revision"]))
            if run.get("cores"):
                cores.add(int(run["cores"]))
    return libs, revisions, cores


def context(res: SweepResults, command: str) -> str:
    """How it was measured: the platform, MPIs, revision, machine and commands."""
    libs, revisions, _ = _run_info(res)
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commands: dict[tuple[str, str], str] = {}
    for row in res.rows:
        commands.setdefault((row["app"], row["mpi"]), " ".join(row.get("command", [])))
    plat = Path(res.sweep["platform"])
    try:
        plat_text = plat.read_text()
    except OSError:
        plat_text = "(not readable)"
    reps = sorted({int(r["repeat"]) + 1 for r in res.rows})
    ks = sorted({float(r.get("dilation") or 1.0) for r in res.rows})
    dilation = (
        "<li>Time dilation (docs/dilation.md): K = "
        + ", ".join(f"{k:g}" for k in ks)
        + (" (none: real time; ranks and router share the machine's cores)" if ks == [1.0]
           else ": every time is virtual")
        + ".</li>"
    )  # fmt: skip
    items = [
        dilation,
        f"<li>Platform <code>{html.escape(str(plat))}</code>, with "
        f"<code>{html.escape(' '.join(res.sweep.get('overrides', [])) or 'no overrides')}</code>"
        f"; varied: <code>{html.escape(json.dumps(res.sweep.get('vary', [])))}</code>; "
        f"up to {reps[-1] if reps else 0} runs per point.</li>",
        f"<li>Machine: {html.escape(host_platform.node())}, {os.cpu_count()} cores, "
        f"{html.escape(cpu)}, Linux {html.escape(host_platform.release())}.</li>",
        "<li>isthmus revision: "
        + (", ".join(f"<code>{html.escape(r)}</code>" for r in sorted(revisions)) or "unknown")
        + ".</li>",
        f"<li>This page: <code>{html.escape(command)}</code>.</li>",
    ]
    items += [f"<li>{html.escape(lib)}</li>" for lib in sorted(libs)]
    cmds = "".join(f"<li><code>{html.escape(c)}</code></li>" for c in commands.values())
    return (
        f"<ul>{''.join(items)}</ul><h3>Commands (one per app and MPI)</h3><ul>{cmds}</ul>"
        f"<details><summary>platform file</summary><pre>{html.escape(plat_text)}</pre></details>"
    )


STYLE = """
body{font-family:system-ui,sans-serif;line-height:1.45;margin:0 auto;max-width:1200px;
padding:0 1rem 2rem}
h1{font-size:1.6rem}h2{font-size:1.3rem;border-bottom:1px solid #ddd;margin-top:2rem}
img{max-width:100%;height:auto}figure{margin:1rem 0}
figcaption{color:#555;font-size:.85rem}
code,pre{overflow-wrap:anywhere;white-space:pre-wrap;font-size:.85rem}
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:.8rem}
td,th{border:1px solid #ccc;padding:2px 6px}
nav ol{columns:2 16rem}.findings li{margin:.4rem 0}.problem{color:#a00}
"""


def _figures(figs: list[tuple[str, str, str]]) -> str:
    """Figures (anchor or "", caption, PNG in base64) as HTML."""
    out = []
    for anchor, caption, data in figs:
        ident = f' id="{html.escape(anchor)}"' if anchor else ""
        out.append(
            f'<figure{ident}><img alt="{html.escape(caption)}" '
            f'src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    return "".join(out)


def _plain(figs: list[tuple[str, str]]) -> str:
    return _figures([("", caption, data) for caption, data in figs])


def _set_against(res: SweepResults) -> str:
    """The apps set against each other (sweep_against.py), figures then their table."""
    figs = sweep_against.plot(res)
    return _figures(figs) + f'<div class="scroll">{sweep_against.table(res)}</div>' if figs else ""


def _also(res: SweepResults, n: int, command: str) -> list[tuple[str, str, str]]:
    """Another sweep's sections on the same page (isthmus report --also DIR)."""
    apps = ", ".join(dict.fromkeys(r["app"] for r in res.rows))
    name = Path(res.sweep["platform"]).stem
    return [
        (f"also{n}-against", f"{name}: set against each other", _set_against(res)),
        (f"also{n}-apps", f"{name}: {apps} against the round trip", _figures(plot_times(res))),
        (f"also{n}-points", f"{name}: points", f'<div class="scroll">{traffic_table(res)}</div>'),
        (f"also{n}-measured", f"{name}: how this was measured", context(res, command)),
    ]


def write(out_dir: Path, page: Path, command: str, also: list[Path] | None = None) -> None:
    res = load(out_dir)
    _, _, cores = _run_info(res)
    model = plot_rtt_bound(res) + plot_bcast_model(res, max(cores, default=0))
    sections: list[tuple[str, str, str]] = [
        ("findings", "What the wide-area link costs", sweep_findings.render(res)),
        ("against", "Set against each other", _set_against(res)),
        ("apps", "Applications against the round trip", _figures(plot_times(res))),
        ("bandwidth", "Point-to-point bandwidth", _plain(plot_bandwidth(res))),
        ("model", "Model against measurement", _plain(model)),
        ("matrices", "Communication matrices (largest round trip)", _plain(matrices(res))),
        ("points", "Points: time and traffic", f'<div class="scroll">{traffic_table(res)}</div>'),
        ("measured", "How this was measured", context(res, command)),
    ]
    for n, extra in enumerate(also or [], 1):
        sections += _also(load(extra), n, command)
    sections = [s for s in sections if s[2]]
    ok = sum(1 for r in res.rows if r["status"] == "ok")
    cores_now = os.cpu_count() or 1
    intro = (
        f"<p>{len(res.rows)} points ({ok} ran to the end) of the sweep in "
        f"<code>{html.escape(str(out_dir))}</code>. Times are medians over repetitions, "
        "ranges from the fastest to the slowest run. On this machine's "
        f"{max(cores, default=cores_now)} cores the ranks and the emulated network's router "
        "take turns when they outnumber the cores, which adds to every time: compare "
        "points with each other, as the sentences below do.</p>"
    )
    toc = "".join(f'<li><a href="#{a}">{html.escape(t)}</a></li>' for a, t, _ in sections)
    body = "".join(
        f'<section id="{a}"><h2>{html.escape(t)}</h2>{content}</section>'
        for a, t, content in sections
    )
    title = f"isthmus sweep report: {', '.join(dict.fromkeys(r['app'] for r in res.rows))}"
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title><style>{STYLE}</style></head>
<body><h1>{html.escape(title)}</h1>
{intro}
<nav><ol>{toc}</ol></nav>
{body}
</body></html>
"""
    atomic.write_text(page, doc)
