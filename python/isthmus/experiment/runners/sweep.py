"""Runner `sweep`: applications with the layer's collectives against the MPI's own, the
points of a sweep file (python/isthmus/sweep.py, docs/sweep.md) run as an experiment.

Each step is one point of the sweep: one `isthmus run` of an application at one setting
of the varied keys, under one MPI and one collectives mode, with the profiler on. The
plan runs the repetitions as whole passes, and inside a pass the modes of one point back
to back, so that both see the machine in the same state. The sweep file's repeat and
baseline are not used (the experiment's repetitions are; no one-cluster baseline), nor
its MPIs beyond the experiment's own. A point that fails or times out is kept as such:
a hang is a finding.

[params]
  sweep = "examples/sweeps/apps-layer.toml"         # a sweep file of the checkout
  figures = { fft_gflops = "rate", loop_s = "time" } # which way each is better
  reference = "native"                               # the mode others are compared with
  apps = ["lammps"]                                  # only these of the sweep's apps
  vary = { "wan.latency" = ["0"] }                   # instead of the sweep's vary

A row per application, MPI, setting and mode: how many runs ended ok, and for the wall
time and each figure the median over the repetitions, range, spread and every value.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

from isthmus import sweep as sweep_mod
from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import spread_stats
from isthmus.sweep import spec as sweep_spec

PARAMS = {"sweep", "figures", "reference", "apps", "vary"}
DIRECTIONS = ("time", "rate")
# What a step keeps of the point's row: who ran, where, its status and its figures.
KEPT = ("app", "mpi", "coll", "status", "exit_code", "wall_s", "app_s", "mpi_s",
        "forwarded_bytes", "repeat")  # fmt: skip


@functools.cache
def _sweep_file(path: Path) -> sweep_spec.Sweep:
    """The sweep file, read once per process (check, steps and every step use it)."""
    return sweep_spec.load_file(path)


def load_sweep(exp: Experiment) -> sweep_spec.Sweep:
    """The experiment's sweep: its file less repeat and baseline, its MPIs the experiment's,
    its apps and varied keys those of params.apps and params.vary when given."""
    p = exp.params
    if not isinstance(p.get("sweep"), str) or not (paths.ROOT / p["sweep"]).is_file():
        raise UserError(f"{exp.path}: params.sweep: expected the path of a sweep file")
    s = _sweep_file(paths.ROOT / p["sweep"])
    wanted = p.get("apps", [a.name for a in s.apps])
    apps = tuple(dataclasses.replace(a, repeat=None) for a in s.apps if a.name in wanted)
    if not apps or len(apps) != len(wanted):
        raise UserError(f"{exp.path}: params.apps: expected names of the sweep's apps")
    vary = s.vary
    if "vary" in p:
        vary = tuple((k, tuple(str(v) for v in vs)) for k, vs in p["vary"].items())
    mpis = tuple(m for m in s.mpis if m in exp.mpis)
    return dataclasses.replace(
        s, apps=apps, vary=vary, mpis=mpis, repeat=exp.repetitions, baseline=False
    )


def check(exp: Experiment) -> None:
    s = load_sweep(exp)
    sweep_spec.check(s)
    if not s.mpis:
        raise UserError(f"{exp.path}: the sweep's MPIs and the experiment's mpis share none")
    figures = exp.params.get("figures", {})
    # the sweep file's figures, also of apps params.apps leaves out
    named = {n for a in _sweep_file(paths.ROOT / exp.params["sweep"]).apps
             for n, _ in a.figures}  # fmt: skip
    if not isinstance(figures, dict) or any(
        name not in named or way not in DIRECTIONS for name, way in figures.items()
    ):
        raise UserError(
            f"{exp.path}: params.figures: expected a figure of the sweep's apps "
            f'({", ".join(sorted(named))}) = "time" or "rate"'
        )
    if exp.params.get("reference", "native") not in s.colls:
        raise UserError(f"{exp.path}: params.reference: expected one of {', '.join(s.colls)}")


def _points(exp: Experiment) -> list[sweep_spec.Point]:
    """Every point, a repetition's whole pass after another, a point's modes side by side,
    and an app and the one it is set against (its `against`) at one setting back to back."""
    s = load_sweep(exp)
    apps = [a.name for a in s.apps]
    lead = {a.name: a.name for a in s.apps}
    lead.update({a.against: a.name for a in s.apps if a.against in lead})
    every = sweep_spec.points(s)
    combos = list(dict.fromkeys(p.settings for p in every))
    return sorted(
        every,
        key=lambda p: (p.repeat, apps.index(lead[p.app.name]), s.mpis.index(p.mpi),
                       combos.index(p.settings), apps.index(p.app.name),
                       s.colls.index(p.coll)),
    )  # fmt: skip


def steps(exp: Experiment) -> list[Step]:
    return [Step(p.id, p.id, {"point": k}) for k, p in enumerate(_points(exp))]


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    sweep_spec.check_installed(load_sweep(exp))  # before the first point runs, and cheap
    point = _points(exp)[step.spec["point"]]
    row = sweep_mod.run_point(load_sweep(exp), point, work)
    keep = {k: row.get(k) for k in KEPT}
    keep["settings"] = dict(point.settings)
    keep["against"] = point.app.against
    keep["figures"] = {n: row.get(n) for n, _ in point.app.figures}
    return keep


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for s in steps_:
        o = outcomes[s.key]
        key = (o["app"], o["mpi"], repr(sorted(o["settings"].items())), o["coll"])
        groups.setdefault(key, []).append(o)
    out = []
    for runs in groups.values():
        first = runs[0]
        ok = [r for r in runs if r["status"] == "ok"]
        row: dict[str, Any] = {
            "app": first["app"], "mpi": first["mpi"], "point": first["settings"],
            "coll": first["coll"], "runs": len(runs), "ok": len(ok),
            "statuses": [r["status"] for r in runs],
            "wall_s": spread_stats([r["wall_s"] for r in ok]) if ok else None,
            "repeats": [r.get("repeat") for r in ok],  # of each value below, in order
            "against": first.get("against"),  # the app this one is set against, if any
        }  # fmt: skip
        for name in ("app_s", "forwarded_bytes"):
            values = [r[name] for r in ok if r.get(name) is not None]
            row[name] = spread_stats(values) if values and len(values) == len(ok) else None
        for name in first["figures"]:
            values = [r["figures"][name] for r in ok if r["figures"][name] is not None]
            row[name] = spread_stats(values) if values else None
        out.append(row)
    return out
