"""`isthmus report DIR`: one self-contained HTML page (PNGs inlined) from a sweep's results.

What it shows, from DIR/results.json, DIR/sweep.json and the points' files (docs/sweep.md):
  - point-to-point bandwidth against message size, a line per round trip, per MPI (the
    first paper's Figures 2-7), from isthmus's pingpong/bw/bibw and from NetPIPE;
  - measured round trips against the configured link's bound 2 (L + m/B);
  - application time, WAN slowdown T(RTT)/T(lowest RTT) and "scalability" (the
    one-cluster baseline's time over the point's) against RTT, per MPI and collective
    mode (Figures 8-12): medians over repetitions, bars from the fastest to the slowest;
  - communication matrices with cluster boundaries, and bytes inside and between clusters;
  - the platform, MPI libraries, machine and command lines.
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
    head += "<th>between clusters</th><th>WAN bytes of isthmus collectives</th></tr>"
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
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<table>{head}{''.join(body)}</table>"


def context(res: SweepResults) -> str:
    """Platform, MPI libraries, machine, commands."""
    libs = set()
    for row in res.rows:
        path = res.out / "points" / row["id"] / "profile.json"
        if path.exists():
            with contextlib.suppress(KeyError, UserError):
                libs.add(f"{row['mpi']}: {records.read_json(path)['mpi']['library']}")
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
    items = [
        f"<li>Platform <code>{html.escape(str(plat))}</code>, with "
        f"<code>{html.escape(' '.join(res.sweep.get('overrides', [])) or 'no overrides')}</code>"
        f"; varied: <code>{html.escape(json.dumps(res.sweep.get('vary', [])))}</code></li>",
        f"<li>Machine: {html.escape(host_platform.node())}, {os.cpu_count()} cores, "
        f"{html.escape(cpu)}, Linux {html.escape(host_platform.release())}</li>",
    ]
    items += [f"<li>{html.escape(lib)}</li>" for lib in sorted(libs)]
    cmds = "".join(f"<li><code>{html.escape(c)}</code></li>" for c in commands.values())
    return (
        f"<ul>{''.join(items)}</ul><h3>Commands (one per app and MPI)</h3><ul>{cmds}</ul>"
        f"<details><summary>platform file</summary><pre>{html.escape(plat_text)}</pre></details>"
    )


# After loading, the page records how many of its images loaded (the report test reads it).
IMAGE_CHECK = """<script>
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
  document.body.setAttribute('data-images', ok + '/' + imgs.length);
});
</script>"""


def write(out_dir: Path, page: Path, command: str) -> None:
    res = load(out_dir)
    sections: list[tuple[str, list[tuple[str, str]]]] = [
        ("Applications against the round trip", plot_times(res)),
        ("Point-to-point bandwidth", plot_bandwidth(res)),
        ("Model against measurement", plot_rtt_bound(res) + plot_bcast_model(res)),
        ("Communication matrices (largest round trip)", matrices(res)),
    ]
    cores = os.cpu_count() or 1
    ok = sum(1 for r in res.rows if r["status"] == "ok")
    parts = [
        f"<p>Made by <code>{html.escape(command)}</code> from {len(res.rows)} points "
        f"({ok} ok) of the sweep in <code>{html.escape(str(out_dir))}</code>. Times are "
        "medians over repetitions, bars from the fastest to the slowest run. "
        f"On this machine's {cores} cores the ranks and the emulated network's router take "
        "turns when they outnumber the cores, which adds to every time.</p>"
    ]
    for title, figs in sections:
        if not figs:
            continue
        parts.append(f"<h2>{html.escape(title)}</h2>")
        for caption, data in figs:
            parts.append(
                f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(caption)}</figcaption></figure>"
            )
    parts.append("<h2>Points: time and traffic</h2>" + traffic_table(res))
    parts.append("<h2>How it was made</h2>" + context(res))
    title = f"isthmus sweep report: {', '.join(dict.fromkeys(r['app'] for r in res.rows))}"
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1400px}}img{{max-width:100%}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ccc;padding:2px 6px}}
figure{{margin:1em 0}}figcaption{{color:#555;font-size:13px}}</style></head>
<body><h1>{html.escape(title)}</h1>
{"".join(parts)}
{IMAGE_CHECK}
</body></html>
"""
    atomic.write_text(page, doc)
