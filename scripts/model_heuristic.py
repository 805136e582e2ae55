#!/usr/bin/env python3
"""Where the paper's optimizer misses the optimum of the pipelined two-layer broadcast, and
by how much: the heuristic (segment sizes M/2^i, hill climbing on k, tree degrees from
ceil(g/s) upward where the height drops, LAN degrees up to gamma'/s_l) against an
exhaustive search over every segmentation and every pair of tree degrees. Parameters: those
derived from the example platforms, and the measured ones in results/model/raw/ when
present. Writes results/model/heuristic.json (or OUT_DIR/heuristic.json).

Usage: scripts/model_heuristic.py [OUT_DIR]   (about a minute; no MPI)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from isthmus import model, plogp
from isthmus import platform as platform_mod

ROOT = Path(__file__).resolve().parents[1]
LAYOUTS = ([2, 2], [4, 4, 4, 4], [8, 8], [16, 1, 3], [2, 2, 2, 2, 2, 2, 2, 2])
SIZES = tuple(1 << i for i in range(10, 23, 2))  # 1 KiB to 4 MiB


def parameter_sets(out_dir: Path) -> list[tuple[str, plogp.Params]]:
    sets = []
    for name in ("two-clusters", "das-4x2", "matsuda-2x16"):
        p = platform_mod.load(ROOT / "examples" / "platforms" / f"{name}.toml")
        sets.append((f"derived from {name}", plogp.from_platform(p)))
    for f in sorted((out_dir / "raw").glob("params-*.txt")):
        params = plogp.read(f)
        if "lan" in params.classes and "wan" in params.classes:
            sets.append((f"measured {f.name}", params))
    return sets


def shape(s: model.Shape) -> dict[str, Any]:
    return {
        "segment": s.segment,
        "segments": s.segments,
        "wan_degree": s.degree,
        "lan_degree": s.lan_degree,
        "time_us": s.time,
    }


def main() -> int:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results" / "model"
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, params in parameter_sets(out_dir):
        lan, wan = params.classes["lan"], params.classes["wan"]
        w, ln = model.wan_layer(wan, lan), model.lan_layer(lan)
        for layout in LAYOUTS:
            pw, pl = len(layout), max(layout)
            for big in SIZES:
                h = model.best_pipelined(w, ln, pw, pl, big)
                best = model.best_pipelined(w, ln, pw, pl, big, model.exhaustive, every=True)
                pruned = model.best_pipelined(w, ln, pw, pl, big, model.exhaustive)
                rows.append(
                    {
                        "parameters": name,
                        "clusters": layout,
                        "bytes": big,
                        "heuristic": shape(h),
                        "optimum": shape(best),
                        "miss": h.time / best.time - 1,
                        "miss_of_segment_search": h.time / pruned.time - 1,
                    }
                )
    misses = [r for r in rows if r["miss"] > 1e-9]
    summary = {
        "cases": len(rows),
        "optimal": len(rows) - len(misses),
        "within_1_percent": sum(r["miss"] <= 0.01 for r in rows),
        "max_miss": max(r["miss"] for r in rows),
        "max_miss_of_segment_search": max(r["miss_of_segment_search"] for r in rows),
    }
    rev = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    doc = {
        "command": "scripts/model_heuristic.py",
        "git_revision": rev,
        "summary": summary,
        "rows": rows,
    }
    (out_dir / "heuristic.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    for r in sorted(misses, key=lambda r: -r["miss"])[:10]:
        print(
            f"{100 * r['miss']:6.1f}%  {r['parameters']:32} {r['clusters']} {r['bytes']:>8} B  "
            f"heuristic {r['heuristic']}  optimum {r['optimum']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
