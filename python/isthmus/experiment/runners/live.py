"""Runner `live`: a network that changes while the program runs, and how the layer's
choices follow it (collectives.adapt: src/coll/hier_adapt.c, docs/layer.md).

Each step is one run of src/bench/series.c (every call's time in a mix of Bcast and
Allreduce at a few sizes) on a network of its own, brought up at the `network` settings;
at iteration `change_at` the network takes the `change` settings (`isthmus net set` while
the program waits, so the change lands at a known call) and at `back_at` the `back` ones.
Each run is one `way` of choosing:
  adaptive     the layer with live adaptation, its model first from the network it starts on
  static-old   the layer without adaptation, the same model (the choice made for the old
               network, kept)
  static-new   the layer without adaptation, its model from the `change` network (the
               choice a static tuning for the new network makes)
  native       the MPI's own collectives
  steady-adaptive, steady-static   no change at all: what adaptation costs when nothing
               changes (alternating in the same experiment run)
With `random = N` instead, each step is one run whose `changes` changes (each one of
`change` or `back`, in turn) come at random iterations (seeded by the step), results
checked against the MPI's own: whether any switch ever mismatched.

[params]
  platform = "examples/platforms/two-clusters.toml"
  set = ["clusters.east.hosts=4", ...]        # the run's and the network's --set
  network = ["wan.latency=1ms", "wan.bandwidth=1Gbit/s"]
  change = ["latency=20ms", "bandwidth=20Mbit/s"]   # net set at change_at
  back = ["latency=1ms", "bandwidth=1Gbit/s"]       # ... at back_at
  sizes = "8,65536,1048576"
  iterations = 180, change_at = 60, back_at = 120
  ways = ["adaptive", "static-old", "static-new", "native", "steady-adaptive", "steady-static"]
  settle = 10        # iterations of a phase left out of its steady median
  timeout = 1800     # seconds, per run
  random = 0         # or N runs per MPI and rank count of random changes (ranks below)
  changes = 3        # per random run
  ranks = [8, 16]    # random runs: clusters.*.hosts scaled to these
"""

from __future__ import annotations

import json
import random
import statistics
import zlib
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.config import platform as platform_file
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import require_platform
from isthmus.experiment.runners._series import run_series

PARAMS = {
    "platform",
    "set",
    "network",
    "change",
    "back",
    "sizes",
    "iterations",
    "change_at",
    "back_at",
    "ways",
    "settle",
    "timeout",
    "random",
    "changes",
    "ranks",
}
WAYS = ("adaptive", "static-old", "static-new", "native", "steady-adaptive", "steady-static")
LAYER = ["layer.collectives=isthmus"]


def check(exp: Experiment) -> None:
    require_platform(exp)
    p = exp.params
    for key in ("set", "network", "change", "back"):
        if not isinstance(p.get(key, []), list):
            raise UserError(f"{exp.path}: params.{key}: expected a list of KEY=VALUE")
    ways = p.get("ways", [])
    if not p.get("random") and (not ways or set(ways) - set(WAYS)):
        raise UserError(f"{exp.path}: params.ways: expected some of {', '.join(WAYS)}")
    its, at, back = p.get("iterations", 0), p.get("change_at", 0), p.get("back_at", 0)
    if not p.get("random") and not 0 < at < back < its:
        raise UserError(
            f"{exp.path}: params: expected 0 < change_at < back_at < iterations, got "
            f"{at}, {back}, {its}"
        )
    if not isinstance(p.get("timeout"), int | float) or p["timeout"] <= 0:
        raise UserError(f"{exp.path}: params.timeout: expected seconds > 0")


def steps(exp: Experiment) -> list[Step]:
    p = exp.params
    if p.get("random"):
        return [
            Step(
                f"r{rep}-{mpi}-{n}-{i}",
                f"rep {rep + 1}, {mpi}, {n} ranks, random run {i + 1}",
                {
                    "mpi": mpi,
                    "ranks": n,
                    "seed": zlib.crc32(f"{rep}-{mpi}-{n}-{i}".encode()),
                    "way": "random",
                },
            )
            for rep in range(exp.repetitions)
            for mpi in exp.mpis
            for n in p.get("ranks", [8])
            for i in range(int(p["random"]))
        ]
    return [
        Step(f"r{rep}-{mpi}-{way}", f"rep {rep + 1}, {mpi}, {way}", {"mpi": mpi, "way": way})
        for rep in range(exp.repetitions)
        for mpi in exp.mpis
        for way in p["ways"]
    ]


def _hosts(exp: Experiment, ranks: int | None) -> list[str]:
    """The cluster sizes for a random run of `ranks` ranks (one a host, two clusters)."""
    if ranks is None:
        return list(exp.params.get("set", []))
    return [f"clusters.east.hosts={ranks // 2}", f"clusters.west.hosts={ranks - ranks // 2}"]


def _plan(exp: Experiment, step: Step) -> dict[int, list[str]]:
    """The iterations at which the network changes, and to what."""
    p = exp.params
    way = step.spec["way"]
    if way.startswith("steady"):
        return {}
    if way != "random":
        return {int(p["change_at"]): list(p["change"]), int(p["back_at"]): list(p["back"])}
    rng = random.Random(step.spec["seed"])
    its = sorted(rng.sample(range(5, int(p["iterations"])), int(p.get("changes", 3))))
    return {it: list(p["change"] if i % 2 == 0 else p["back"]) for i, it in enumerate(its)}


def _way_settings(exp: Experiment, way: str) -> list[str]:
    """The run's --set for a way of choosing (the network itself is already up)."""
    p = exp.params
    if way == "native":
        return ["layer.collectives=native"]
    if way in ("adaptive", "steady-adaptive", "random"):
        return [*LAYER, "collectives.adapt=true"]
    if way == "static-new":  # the model from the network it changes to
        return [*LAYER, *(f"wan.{setting}" for setting in p["change"])]
    return list(LAYER)


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    p, spec = exp.params, step.spec
    args = ["--sizes", str(p.get("sizes", "8,65536,1048576")), "--iterations", str(p["iterations"])]
    if spec["way"] == "random":  # every result against the MPI's own too (not timed runs)
        args.append("--check-native")
    run = run_series(
        str(paths.ROOT / p["platform"]),
        [*_hosts(exp, spec.get("ranks")), *p.get("network", [])],
        _way_settings(exp, spec["way"]),
        spec["mpi"],
        _plan(exp, step),
        args,
        work,
        step.key,
        p["timeout"],
    )
    calls = [json.loads(x) for x in run["out"].splitlines() if x.startswith("{")]
    return {
        "status": run["status"],
        "last": run["last"],
        "changed_at": run["changed_at"],
        "calls": [[c["iteration"], c["collective"], c["bytes"], round(c["us"], 1)] for c in calls],
        "switches": run["profile"].get("adaptation", {}).get("switches", []),
    }


def _phases(exp: Experiment) -> list[tuple[str, int, int]]:
    p = exp.params
    return [
        ("before", 0, p["change_at"]),
        ("changed", p["change_at"], p["back_at"]),
        ("back", p["back_at"], p["iterations"]),
    ]


def _series(outcome: dict[str, Any], coll: str, nbytes: int) -> list[float]:
    return [us for _, c, b, us in outcome["calls"] if c == coll and b == nbytes]


def _window(exp: Experiment, coll: str) -> int:
    """How many consecutive calls make one sample of a way's time: for Bcast, one turn of
    its root round the ranks (series.c moves the root each iteration; a call's time depends
    on where its root is, so a median of single calls picks one of the roots' modes: in
    adaptive/live-dilated, a way whose calls took 41 ms and 2 ms in turn had the median 2);
    for Allreduce, one call."""
    if coll != "bcast":
        return 1
    p = exp.params
    return platform_file.load(paths.ROOT / p["platform"], _hosts(exp, None)).total_ranks


def _samples(calls: list[float], window: int) -> list[float]:
    """The mean of each run of `window` consecutive calls (every start)."""
    return [statistics.fmean(calls[i : i + window]) for i in range(len(calls) - window + 1)]


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    if exp.params.get("random"):
        return _random_rows(exp, steps_, outcomes)
    settle = int(exp.params.get("settle", 10))
    out: list[dict[str, Any]] = []
    keys = sorted({(c, b) for o in outcomes.values() for _, c, b, _ in o["calls"]})
    for mpi in exp.mpis:
        runs = {
            w: [outcomes[s.key] for s in steps_ if s.spec == {"mpi": mpi, "way": w}]
            for w in exp.params["ways"]
        }
        failed = [o["last"] for rs in runs.values() for o in rs if o["status"] != 0]
        for coll, nbytes in keys:
            # per way, per iteration: the median over the repetitions of the call's time
            series = {
                w: [
                    statistics.median(v)
                    for v in zip(
                        *(_series(o, coll, nbytes) for o in rs if o["status"] == 0), strict=False
                    )
                ]
                for w, rs in runs.items()
            }
            out.append(
                {"kind": "series", "mpi": mpi, "collective": coll, "bytes": nbytes, "us": series}
            )
            if "adaptive" in series:
                window = _window(exp, coll)
                out += _phase_rows(exp, mpi, coll, nbytes, series, settle, window)
        if "steady-adaptive" in runs:
            out.append(_overhead_row(mpi, runs))
        out.append(
            {
                "kind": "runs",
                "mpi": mpi,
                "failed": failed,
                "switches": {w: [len(o["switches"]) for o in rs] for w, rs in runs.items()},
            }
        )
    return out


def _phase_rows(
    exp: Experiment,
    mpi: str,
    coll: str,
    nbytes: int,
    series: dict[str, list[float]],
    settle: int,
    window: int,
) -> list[dict[str, Any]]:
    """Per phase: each way's steady time (the median of its samples, _window); after a
    change, the calls the adaptive way took to come within 15% of the best static choice
    (the median of 5 consecutive samples, from the change on), and its steady time over
    the static choice for the old network."""
    rows_ = []
    statics = [w for w in ("static-old", "static-new", "native") if series.get(w)]
    for phase, lo, hi in _phases(exp):
        steady = {
            w: statistics.median(_samples(s[lo + settle : hi], window))
            for w, s in series.items()
            if len(s) >= hi and not w.startswith("steady")
        }
        best_way = min(statics, key=lambda w: steady[w]) if statics else None
        follow = None
        if best_way and lo > 0:
            bar = 1.15 * steady[best_way]
            a = _samples(series["adaptive"][lo:hi], window)
            follow = next(
                (i for i in range(len(a) - 4) if statistics.median(a[i : i + 5]) <= bar), None
            )
        rows_.append(
            {
                "kind": "phase",
                "mpi": mpi,
                "collective": coll,
                "bytes": nbytes,
                "phase": phase,
                "median_us": steady,
                "best_static": best_way,
                "adaptive_over_best": steady["adaptive"] / steady[best_way] if best_way else None,
                "adaptive_over_old": steady["adaptive"] / steady["static-old"]
                if "static-old" in steady
                else None,
                "calls_to_follow": follow,
            }
        )
    return rows_


def _overhead_row(mpi: str, runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The collectives' total time with adaptation on over off, per repetition (pairs in
    the order they ran), and the switches made when nothing changed."""
    on, off = runs["steady-adaptive"], runs.get("steady-static", [])
    ratios = [
        sum(us for *_, us in a["calls"]) / sum(us for *_, us in b["calls"])
        for a, b in zip(on, off, strict=False)
        if a["status"] == 0 and b["status"] == 0
    ]
    return {
        "kind": "overhead",
        "mpi": mpi,
        "ratios": ratios,
        "median": statistics.median(ratios) if ratios else None,
        "switches_when_steady": [len(a["switches"]) for a in on],
    }


def _random_rows(
    exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]
) -> list[dict[str, Any]]:
    out = []
    for mpi in exp.mpis:
        for n in exp.params.get("ranks", [8]):
            here = [
                outcomes[s.key] for s in steps_ if s.spec["mpi"] == mpi and s.spec["ranks"] == n
            ]
            out.append(
                {
                    "kind": "random",
                    "mpi": mpi,
                    "ranks": n,
                    "runs": len(here),
                    "ok": sum(o["status"] == 0 for o in here),
                    "failed": [o["last"] for o in here if o["status"] != 0],
                    "switches": sum(len(o["switches"]) for o in here),
                    "changes": sum(len(o["changed_at"]) for o in here),
                }
            )
    return out
