"""`isthmus sweep`: run applications over a matrix of platform settings, MPIs and collective
modes on the emulated network, one `isthmus run` per point, and keep every result.

A sweep is the matrix apps x MPIs x collective modes x the values of each varied platform
key (their product) x repetitions, plus, unless switched off, a baseline per app, MPI and
repetition on one cluster holding the same ranks (the first paper's "scalability" divides
by it). Each point runs with the profiler on and leaves, in DIR/points/ID/:

  stdout.txt, stderr.txt   what the application printed
  profile.json             the profile (when the application reached MPI_Finalize)
  point.json               the point's result row, written last: its presence means done

DIR/results.csv and DIR/results.json hold every done point as one tidy table, rewritten
after each point; DIR/sweep.json holds the sweep itself. Running the same sweep into the
same DIR again skips the done points (resume); a point interrupted by Ctrl-C leaves no
point.json and runs again next time. A point that fails or times out is recorded as such
and the sweep goes on.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from isthmus import records
from isthmus.config import paths
from isthmus.config import platform as platform_mod
from isthmus.errors import UserError
from isthmus.launch.processes import EXIT_TIMEOUT
from isthmus.profile import forwarders
from isthmus.records import atomic
from isthmus.sweep.spec import (
    BASELINE,
    App,
    Point,
    Sweep,
    check,
    check_installed,
    one_cluster_toml,
    points,
)

RESULT_COLUMNS = (
    "id",
    "app",
    "mpi",
    "coll",
    "platform",
    "baseline",
    "repeat",
    "status",
    "exit_code",
    "wall_s",
    "dilation",
    "app_s",
    "mpi_s",
    "inter_bytes",
    "intra_bytes",
    "wan_coll_bytes",
    "forwarded_bytes",
)


def _settings(point: Point, sweep: Sweep) -> list[str]:
    sets = [] if point.baseline else [*sweep.overrides, *point.app.settings(dict(point.settings))]
    sets += [f"{k}={v}" for k, v in point.settings]
    sets.append(f"layer.collectives={point.coll}")
    return [x for s in sets for x in ("--set", s)]


def _placement(point: Point, sweep: Sweep) -> list[str]:
    placed = point.app.placement_file(sweep.here.resolve())
    return [] if placed is None or point.baseline else ["--placement", str(placed)]


def _figures(app: App, text: str) -> tuple[dict[str, float | None], list[str]]:
    found: dict[str, float | None] = {}
    missing = []
    for name, pattern in app.figures:
        matches = re.findall(pattern, text, flags=re.MULTILINE)
        value = matches[-1] if matches else None
        if isinstance(value, tuple):
            value = value[0]
        try:
            found[name] = float(value) if value is not None else None
        except ValueError:
            found[name] = None
        if found[name] is None:
            missing.append(name)
    return found, missing


def _profile_figures(path: Path) -> dict[str, Any]:
    """Times and traffic from the point's profile: application and MPI seconds (slowest
    rank), bytes between and inside clusters (point-to-point plus collectives' logical
    traffic), and the bytes the WAN-aware collectives sent across the WAN."""
    try:
        data = records.read_json(path, "profile", "profile")
    except UserError:
        return {}
    ranks = data.get("ranks", [])
    traffic = data.get("traffic", {})
    wan_rows = data.get("wan", {}).get("rows", [])
    return {
        "app_s": max((r["app_seconds"] for r in ranks), default=None),
        "mpi_s": max((r["mpi_seconds"] for r in ranks), default=None),
        "inter_bytes": sum(t["inter"]["bytes"] for t in traffic.values()),
        "intra_bytes": sum(t["intra"]["bytes"] for t in traffic.values()),
        "wan_coll_bytes": sum(row[4] for row in wan_rows),
        # what the zipper forwarders relayed between two networks (docs/profile.md)
        "forwarded_bytes": forwarders.between_networks(data),
        "dilation": data.get("run", {}).get("dilation", 1.0),
    }


def baseline_platform(sweep: Sweep, app: App, out: Path) -> Path:
    """The app's one-cluster platform file in the sweep's directory (written once)."""
    path = out / f"{BASELINE}-{re.sub(r'[^A-Za-z0-9._-]', '_', app.name)}.toml"
    if not path.exists():
        varied = {k: v[0] for k, v in sweep.vary}  # {KEY}: the first value (ranks only)
        p = platform_mod.load(sweep.platform, [*sweep.overrides, *app.settings(varied)])
        atomic.write_text(path, one_cluster_toml(p))
    return path


def run_point(sweep: Sweep, point: Point, out: Path) -> dict[str, Any]:
    """Run one point (blocking) and return its row; the caller writes it."""
    pdir = out / "points" / point.id
    if pdir.exists():
        shutil.rmtree(pdir)  # what an interrupted earlier attempt left
    pdir.mkdir(parents=True)
    for f in point.app.input_files(sweep.here.resolve()):
        shutil.copyfile(f, pdir / f.name)
    platform_file = baseline_platform(sweep, point.app, out) if point.baseline else sweep.platform
    cmd = [
        str(paths.isthmus_command()),
        "run",
        "-p",
        str(platform_file),
        "--mpi",
        point.mpi,
        *_settings(point, sweep),
        *_placement(point, sweep),
        "--profile",
        str(pdir / "profile.json"),
        "--timeout",
        f"{sweep.timeout:g}s",
        "--",
        *point.app.command(point.mpi, pdir, sweep.here.resolve()),
    ]
    started = time.monotonic()
    with open(pdir / "stdout.txt", "wb") as so, open(pdir / "stderr.txt", "wb") as se:
        cwd = pdir if point.app.inputs else None
        proc = subprocess.Popen(cmd, stdout=so, stderr=se, cwd=cwd, start_new_session=True)
        try:
            rc = proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)  # isthmus run stops the job and its network
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            raise
    wall = time.monotonic() - started
    source = pdir / (point.app.figures_in or "stdout.txt")
    text = source.read_text(errors="replace") if source.is_file() else ""
    figures, missing = _figures(point.app, text)
    status = "ok" if rc == 0 else ("timeout" if rc == EXIT_TIMEOUT else "failed")
    row: dict[str, Any] = {
        "id": point.id,
        "app": point.app.name,
        "mpi": point.mpi,
        "coll": point.coll,
        "platform": BASELINE if point.baseline else sweep.platform.stem,
        "baseline": point.baseline,
        "repeat": point.repeat,
        "status": status,
        "exit_code": rc,
        "wall_s": round(wall, 6),
        "app_s": None,
        "mpi_s": None,
        "inter_bytes": None,
        "intra_bytes": None,
        "wan_coll_bytes": None,
    }
    row.update(_profile_figures(pdir / "profile.json"))
    # dilated runs: every time is virtual (the profile's already are; docs/dilation.md)
    row["wall_s"] = round(wall / row.setdefault("dilation", 1.0), 6)
    row["wall_real_s"] = round(wall, 6)
    row.update({k: v for k, v in point.settings})
    row.update(figures)
    row["missing_figures"] = missing
    row["command"] = cmd
    records.write_json(pdir / "point.json", row, "sweep-point")
    return row


def load_rows(out: Path) -> list[dict[str, Any]]:
    rows = []
    for f in sorted((out / "points").glob("*/point.json")):
        rows.append(records.read_json(f, "sweep-point", "sweep point"))
    return rows


def write_table(out: Path, rows: list[dict[str, Any]], sweep: Sweep) -> None:
    """results.json and results.csv: every done point, in the sweep's order."""
    order = {p.id: i for i, p in enumerate(points(sweep))}
    rows = sorted(rows, key=lambda r: order.get(r["id"], len(order)))
    extra = [k for k, _ in sweep.vary] + [n for a in sweep.apps for n, _ in a.figures]
    columns = [*RESULT_COLUMNS, *dict.fromkeys(extra)]
    records.write_json(out / "results.json", rows)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: "" if r.get(c) is None else r.get(c) for c in columns})
    atomic.write_text(out / "results.csv", buf.getvalue())


def describe(sweep: Sweep) -> dict[str, Any]:
    d = asdict(sweep)
    d["platform"] = str(sweep.platform)
    d["here"] = str(sweep.here)
    return d


def run_sweep(sweep: Sweep, out: Path, console: Console | None = None) -> int:
    """Run every point not yet done; 0 when all points ran (whatever their status)."""
    console = console or Console(stderr=True)
    plat = check(sweep)
    check_installed(sweep)
    out.mkdir(parents=True, exist_ok=True)
    recorded = out / "sweep.json"
    if recorded.exists():
        before = records.read_json(recorded)
        if before != json.loads(json.dumps(describe(sweep))):
            raise UserError(
                f"{out}: holds results of a different sweep ({recorded}); use another -o DIR"
            )
    records.write_json(recorded, describe(sweep))
    todo = [p for p in points(sweep) if not (out / "points" / p.id / "point.json").exists()]
    total = len(points(sweep))
    console.print(
        f"sweep: {total} points ({total - len(todo)} already done) into {out}; "
        f"{plat.total_ranks} ranks per run on {os.cpu_count()} cores"
    )
    rows = load_rows(out)
    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("sweep", total=len(todo))
        for p in todo:
            progress.update(task, description=p.id)
            row = run_point(sweep, p, out)
            rows.append(row)
            write_table(out, rows, sweep)
            if row["status"] != "ok":
                progress.console.print(f"[red]{p.id}: {row['status']} (exit {row['exit_code']})")
            for name in row["missing_figures"]:
                progress.console.print(
                    f"[yellow]warning: {p.id}: figure {name!r} not found in the output "
                    "(wall time still recorded)"
                )
            progress.advance(task)
    write_table(out, rows, sweep)
    failed = sum(1 for r in rows if r["status"] != "ok")
    console.print(f"sweep: done, {len(rows)} points, {failed} not ok; table: {out}/results.csv")
    return 0
