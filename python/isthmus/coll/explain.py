"""`isthmus coll explain`: what the layer's selector predicts for each candidate of a
collective on a platform, and which it runs (the C selector itself, src/model/coll_cost.h,
run without MPI by build/bin/isthmus-coll-model)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from isthmus.config import paths
from isthmus.config.platform import COLLECTIVE_NAMES, Platform
from isthmus.errors import UserError
from isthmus.launch import environment
from isthmus.launch import mpi as mpi_mod
from isthmus.model import plogp
from isthmus.model.plogp import Params

MPIS = ("openmpi", "mpich")


@dataclass(frozen=True)
class Candidate:
    name: str
    native: bool
    predicted_us: float


@dataclass(frozen=True)
class Choice:
    mpi: str  # and how its ranks wait: "openmpi, sleep"
    collective: str
    bytes: int
    chosen: str
    candidates: tuple[Candidate, ...]
    # the selector keeps the MPI's own unless another is predicted this much faster
    # (IST_NATIVE_MARGIN in src/model/coll_cost.h, as the selector reports it)
    margin: float = 0.0
    measured: tuple[bool, float, float] | None = None  # a tuning file's rule: ours?, us, us

    def why(self) -> str:
        """One line: why the chosen candidate runs."""
        native = self.candidates[0]
        if self.measured is not None:
            ours, ours_us, native_us = self.measured
            runs = "ours" if ours else "the MPI's own"
            return (
                f"the tuning file measured ours {ours_us:.0f} us and the MPI's own "
                f"{native_us:.0f} us near this size: {runs} runs"
            )
        best_other = min(self.candidates[1:], key=lambda c: c.predicted_us, default=None)
        if best_other is None:
            return "one cluster: the MPI's own"
        gain = 1 - best_other.predicted_us / native.predicted_us if native.predicted_us else 0
        if self.chosen == native.name:
            if gain <= 0:
                return f"{native.name} is predicted fastest"
            return (
                f"{best_other.name} is predicted {gain:.1%} faster, under the "
                f"{self.margin:.0%} margin the MPI's own keeps"
            )
        return f"{self.chosen} is predicted {gain:.0%} faster than {native.name}"


def layout(p: Platform) -> tuple[list[int], list[int]]:
    """Each world rank's cluster (numbered by lowest rank, as the layer numbers them) and
    host (the lowest rank on it) on the platform's clusters, as `isthmus run` places them."""
    names = p.rank_clusters()
    per_host = {c.name: c.ranks_per_host for c in p.clusters}
    number: dict[str, int] = {}
    taken = dict.fromkeys(per_host, 0)
    first_on: dict[tuple[str, int], int] = {}
    clusters, hosts = [], []
    for rank, name in enumerate(names):
        clusters.append(number.setdefault(name, len(number)))
        host = taken[name] // per_host[name]
        taken[name] += 1
        hosts.append(first_on.setdefault((name, host), rank))
    return clusters, hosts


def wait_of(p: Platform, mpi: str, cores: int | None = None) -> str:
    """How `isthmus run` makes the platform's ranks wait on a machine of `cores` cores
    (default: this one's): sleeping, the MPI's collectives run as their nonblocking forms."""
    ranks = len(p.rank_clusters())
    return environment.wait_mode(
        p, mpi_mod.IMPLEMENTATIONS[mpi], ranks, cores or os.cpu_count() or 1
    )


def explain(
    p: Platform,
    params: Params,
    mpi: str,
    collective: str,
    sizes: list[int],
    tuning: Path | None = None,
    cores: int | None = None,
) -> list[Choice]:
    """Each size's candidates and choice, as the layer would see them under `isthmus run`
    on a machine of `cores` cores (default: this one's; they decide how ranks wait)."""
    if collective not in COLLECTIVE_NAMES:
        raise UserError(f"collective {collective!r}: expected one of {', '.join(COLLECTIVE_NAMES)}")
    if mpi not in MPIS:
        raise UserError(f"--mpi {mpi}: expected {' or '.join(MPIS)}")
    clusters, hosts = layout(p)
    if not clusters:
        raise UserError(f"{p.path}: no cluster gives its rank count (hosts x ranks_per_host)")
    # as isthmus run would wait: sleeping, the MPI's collectives run as nonblocking forms
    wait = wait_of(p, mpi, cores)
    tool = paths.build_dir() / "bin" / "isthmus-coll-model"
    if not tool.exists():
        raise UserError(f"{tool}: not built; run 'make build'")
    with tempfile.TemporaryDirectory() as tmp:
        params_file = Path(tmp) / "params.txt"
        plogp.write(params, params_file)
        cmd = [str(tool), *(["--tuning", str(tuning)] if tuning else []), str(params_file),
               f"{mpi}:{wait}",
               ",".join(map(str, clusters)), ",".join(map(str, hosts)), collective,
               *map(str, sizes)]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UserError(done.stderr.strip() or f"{tool}: exit status {done.returncode}")
    out = []
    for line in done.stdout.splitlines():
        d = json.loads(line)
        cands = tuple(Candidate(c["name"], c["native"], c["predicted_us"]) for c in d["candidates"])
        tuned = d["tuned"]
        measured = (tuned["ours"], tuned["ours_us"], tuned["native_us"]) if tuned else None
        who = f"{mpi}, {wait}"
        out.append(
            Choice(who, d["collective"], d["bytes"], d["chosen"], cands, d["margin"], measured)
        )
    return out
