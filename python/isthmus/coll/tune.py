"""`isthmus coll tune`: measure, on a platform, the layer's collectives against the MPI's
own at every size, and write a tuning file that tells the layer which to run where
(src/model/coll_tuning.h has the format and its one reader; this is its one writer).

The coll benchmark times both in one run (`--entries mpi,native`: the layer's algorithm,
forced with collectives.select = "always", on MPI_COMM_WORLD, the MPI's own on a
duplicate named isthmus:native, call by call: A B, B A, ...). Ours is chosen at a size only
when its median is more than MARGIN below the MPI's own: the layer must never be slower
than the library it sits on, and a tie goes to the library."""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isthmus import bench, records
from isthmus.coll.explain import layout, wait_of
from isthmus.config import platform as platform_mod
from isthmus.config.platform import Platform
from isthmus.errors import UserError
from isthmus.records import atomic

MAGIC = "isthmus-coll-tuning 1"
MARGIN = 0.05
QUICK_COLLECTIVES = ("barrier", "allreduce", "alltoall")


@dataclass(frozen=True)
class Rule:
    collective: str
    first: int  # bytes, inclusive
    last: int
    ours: bool
    ours_us: float
    native_us: float


def rules_from(recs: list[dict[str, Any]]) -> list[Rule]:
    """Rules from coll benchmark records with both entries: per collective, runs of sizes
    with the same choice, split halfway (geometrically) between measured sizes."""
    medians: dict[tuple[str, int], dict[str, float]] = {}
    for r in recs:
        if r.get("record") == "coll" and r.get("latency_median_us", -1) > 0:
            key = (r["collective"], r["bytes"])
            medians.setdefault(key, {})[r["entry"]] = r["latency_median_us"]
    out: list[Rule] = []
    for coll in dict.fromkeys(c for c, _ in medians):
        both = {b: m for (c, b), m in medians.items() if c == coll and len(m) == 2}
        ratio = {b: m["mpi"] / m["native"] for b, m in both.items()}
        runs: list[list[int]] = []  # consecutive sizes with the same choice
        for b in sorted(both):
            if runs and (ratio[runs[-1][0]] < 1 - MARGIN) == (ratio[b] < 1 - MARGIN):
                runs[-1].append(b)
            else:
                runs.append([b])
        for i, sizes in enumerate(runs):
            ours = ratio[sizes[0]] < 1 - MARGIN
            # the size that argues least for the choice
            worst = (max if ours else min)(sizes, key=lambda b: ratio[b])
            first = 0 if i == 0 else _between(runs[i - 1][-1], sizes[0])
            last = _between(sizes[-1], runs[i + 1][0]) - 1 if i + 1 < len(runs) else sizes[-1]
            m = both[worst]
            out.append(Rule(coll, first, max(first, last), ours, m["mpi"], m["native"]))
    return out


def _between(a: int, b: int) -> int:
    """The geometric middle of two measured sizes: where one's rule hands over."""
    return max(a + 1, math.ceil(math.sqrt(max(a, 1) * b)))


def write(path: Path, p: Platform, mpi: str, source: str, rules: list[Rule]) -> None:
    clusters, _ = layout(p)
    wait = wait_of(p, mpi)
    lines = [
        "# Which collectives the layer runs where: measured by isthmus coll tune",
        "# (docs/collectives.md). rule: collective, bytes from, to, choice, median us of",
        "# ours and of the MPI's own at the size in the range that argues least for it.",
        MAGIC,
        f"platform {p.name}",
        f"mpi {mpi}",
        f"wait {wait}",
        f"ranks {len(clusters)} clusters {len(set(clusters))}",
        f"source {source}",
    ]
    for r in rules:
        lines.append(
            f"rule {r.collective} {r.first} {r.last} {'ours' if r.ours else 'native'} "
            f"{r.ours_us:.3f} {r.native_us:.3f}"
        )
    atomic.write_text(path, "\n".join(lines) + "\n")


def tune(
    platform_path: str,
    sets: list[str],
    mpi: str,
    quick: bool,
    output: Path,
    timeout: float | None,
) -> list[Rule]:
    forced = [*sets, "layer.collectives=isthmus", "collectives.select=always"]
    p = platform_mod.load(platform_path, forced)
    if len(p.clusters) < 2:
        raise UserError(f"{platform_path}: one cluster: nothing to choose (expected at least two)")
    colls = QUICK_COLLECTIVES if quick else platform_mod.COLLECTIVE_NAMES
    max_size = 1 << 12 if quick else 1 << 20
    args = [
        "--entries", "mpi,native", "--collectives", ",".join(colls),
        "--min-size", "8", "--max-size", str(max_size),
        "--iterations", "3" if quick else "20", "--warmup", "1",
    ]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "coll.jsonl"
        rc = bench.bench("coll", p, mpi, args, out, tuple(forced), timeout=timeout)
        if rc != 0:
            raise UserError(f"coll benchmark on {platform_path} failed (exit status {rc})")
        _, recs = records.read_bench(out)
    rules = rules_from(recs)
    if not rules:
        raise UserError(f"coll benchmark on {platform_path}: no size measured for both entries")
    source = f"bench coll {' '.join(args)}" + "".join(f" --set {s}" for s in sets)
    write(output, p, mpi, source, rules)
    return rules
