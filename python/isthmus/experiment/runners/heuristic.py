"""Runner `heuristic`: where the paper's optimizer misses the optimum of the pipelined
two-layer broadcast, and by how much (no MPI, no network: the model alone).

The heuristic (python/isthmus/model.py: segment sizes M/2^i, hill climbing on k, tree
degrees from ceil(g/s) upward where the height drops, LAN degrees up to gamma'/s_l)
against an exhaustive search over every segmentation and every pair of tree degrees,
for parameters derived from platform files, over cluster layouts and sizes.

[params]
  platforms = ["examples/platforms/two-clusters.toml", ...]   # parameters derived from each
  layouts = [[2, 2], [4, 4, 4, 4], ...]                        # ranks per cluster
  sizes = ["1KiB", "4KiB", ...]

A row per (parameters, layout, size): both shapes, their times, and the heuristic's miss
(time / optimum - 1), also against a search over segment sizes only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.config import platform as platform_mod
from isthmus.config.units import UnitError, parse_size
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.model import bcast as model
from isthmus.model import plogp

PARAMS = {"platforms", "layouts", "sizes"}


def check(exp: Experiment) -> None:
    try:
        [parse_size(s) for s in exp.params["sizes"]]
        assert all(isinstance(x, list) and x for x in exp.params["layouts"])
        assert all((paths.ROOT / f).is_file() for f in exp.params["platforms"])
    except (KeyError, TypeError, AssertionError):
        raise UserError(f"{exp.path}: params: expected platforms (files), layouts (lists of "
                        "ranks per cluster) and sizes") from None  # fmt: skip
    except UnitError as e:
        raise UserError(f"{exp.path}: params.sizes: {e}") from None


def steps(exp: Experiment) -> list[Step]:
    return [Step(f"p{k}", f"parameters of {Path(f).stem}", {"platform": f})
            for k, f in enumerate(exp.params["platforms"])]  # fmt: skip


def _shape(s: model.Shape) -> dict[str, Any]:
    return {"segment": s.segment, "segments": s.segments, "wan_degree": s.degree,
            "lan_degree": s.lan_degree, "time_us": s.time}  # fmt: skip


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    params = plogp.from_platform(platform_mod.load(paths.ROOT / step.spec["platform"]))
    lan, wan = params.classes["lan"], params.classes["wan"]
    w, ln = model.wan_layer(wan, lan), model.lan_layer(lan)
    out = []
    for layout in exp.params["layouts"]:
        pw, pl = len(layout), max(layout)
        for big in map(parse_size, exp.params["sizes"]):
            h = model.best_pipelined(w, ln, pw, pl, big)
            best = model.best_pipelined(w, ln, pw, pl, big, model.exhaustive, every=True)
            pruned = model.best_pipelined(w, ln, pw, pl, big, model.exhaustive)
            out.append({
                "parameters": f"derived from {Path(step.spec['platform']).stem}",
                "clusters": layout, "bytes": big, "heuristic": _shape(h), "optimum": _shape(best),
                "miss": h.time / best.time - 1, "miss_of_segment_search": h.time / pruned.time - 1,
            })  # fmt: skip
    return {"rows": out}


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for s in steps_ for r in outcomes[s.key]["rows"]]
