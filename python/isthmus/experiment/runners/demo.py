"""Runner `demo`: how long `make demo` takes, from a clean clone, and whether every
point of its sweep ran.

Each step clones this checkout's HEAD into a temporary folder (so nothing built or
installed in the checkout counts), runs the command there with its output in the
temporary folder, and times it. The sweep it ran is read back (`results.json`): how many
points, how many ended ok. The clone is removed afterwards.

[params]
  clone = true                                  # false: run in the checkout itself
  command = ["make", "demo"]                    # "{out}" stands for the output folder
  env = { DEMO_OUT = "{out}" }
  sweep = ["{out}/sweep", "{out}/zipper"]       # the sweep folders the command writes
  keep = "docs/demo"                            # where the last run's report goes

With `keep`, the last repetition's report, its sweep's table and screenshots of the
report at a phone's and a wide screen's width (report-390.png, report-1400.png) are
copied into that folder of the checkout: docs/demo/ is this experiment's product.

A row per repetition: seconds, points, points ok, and the figures of every point that
ran (application, MPI, collectives, platform, settings, repeat, times and the sweep's
figures), which docs/demo.md's "What it shows" renders (block demo/shows).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from isthmus import records
from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step, browser

PARAMS = {"clone", "command", "env", "sweep", "timeout", "keep", "report"}


def check(exp: Experiment) -> None:
    cmd = exp.params.get("command")
    if not isinstance(cmd, list) or not cmd or not all(isinstance(x, str) for x in cmd):
        raise UserError(f"{exp.path}: params.command: expected a list of strings")


def steps(exp: Experiment) -> list[Step]:
    return [Step(f"r{rep}", f"rep {rep + 1}", {}) for rep in range(exp.repetitions)]


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    p = exp.params
    with tempfile.TemporaryDirectory(prefix="isthmus-demo-") as tmp:
        out = Path(tmp) / "out"
        here = paths.ROOT
        if p.get("clone", True):
            here = Path(tmp) / "clone"
            subprocess.run(["git", "clone", "-q", str(paths.ROOT), str(here)], check=True)

        def fill(text: str) -> str:
            return text.replace("{out}", str(out))

        env = {**os.environ, **{k: fill(v) for k, v in p.get("env", {}).items()}}
        start = time.monotonic()
        done = subprocess.run(
            [fill(x) for x in p["command"]], cwd=here, env=env, capture_output=True, text=True
        )
        seconds = time.monotonic() - start
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise UserError(f"{step.label}: {' '.join(p['command'])} failed: {tail}")
        given = p.get("sweep", "{out}/sweep")
        sweeps = [Path(fill(x)) for x in ([given] if isinstance(given, str) else given)]
        points = [r for s in sweeps for r in records.read_json(s / "results.json")]
        if p.get("keep") and step.key == f"r{exp.repetitions - 1}":
            keep(Path(fill(p.get("report", "{out}/report.html"))), sweeps, paths.ROOT / p["keep"])
    return {
        "seconds": seconds,
        "points": len(points),
        "ok": sum(1 for r in points if r["status"] == "ok"),
        "figures": [point_figures(r) for r in points],
    }


def keep(report: Path, sweeps: list[Path], folder: Path) -> None:
    """The report, its sweeps' tables and its screenshots into `folder` (docs/demo): the
    first sweep's results.csv, the others' as results-NAME.csv."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(report, folder / "report.html")
    for n, sweep in enumerate(sweeps):
        name = "results.csv" if n == 0 else f"results-{sweep.name}.csv"
        shutil.copyfile(sweep / "results.csv", folder / name)
    for width in browser.WIDTHS:
        browser.screenshot(folder / "report.html", width, folder / f"report-{width}.png")


# What a point's row drops: its paths, command and the columns no table reads; it keeps who
# ran, where (its settings) and what it measured (times, bytes, the sweep's figures).
DROPPED = {"id", "baseline", "exit_code", "mpi_s", "intra_bytes", "missing_figures", "command"}


def point_figures(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in DROPPED}


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    runs = [outcomes[s.key] for s in steps_]
    secs = [r["seconds"] for r in runs]
    return [{"command": " ".join(exp.params["command"]), "clone": exp.params.get("clone", True),
             "median_s": statistics.median(secs), "min_s": min(secs), "max_s": max(secs),
             "runs": runs}]  # fmt: skip
