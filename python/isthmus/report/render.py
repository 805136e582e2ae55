"""`isthmus experiment render [--check]`: tables and plots made from the results files.

Markdown files (README.md, docs/, results/) hold rendered blocks between markers:

    <!-- render collectives/latency -->
    ... written by render, never by hand ...
    <!-- end render -->

`render` rewrites every block from the JSON and redraws the plots; `render --check`
rewrites nothing and fails (exit 1) when a block differs from what its JSON gives, a
block names no known table, a plot is missing, or a results file lacks its provenance
header, names a revision outside this history, or was made from a dirty tree or with
--quick. The prose around the blocks is hand-written and repeats no numbers.

Each table is one function of BLOCKS; the performance table (targets.py) is one too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isthmus import records
from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment import all_names, provenance
from isthmus.records import atomic
from isthmus.report import blocks_adaptive as adaptive
from isthmus.report import blocks_apps as apps
from isthmus.report import blocks_dilation as dil
from isthmus.report import blocks_live as live
from isthmus.report import blocks_mpiio as mpiio
from isthmus.report import blocks_net as net
from isthmus.report import blocks_robustness as robustness
from isthmus.report import blocks_slurm as slurm_blocks
from isthmus.report import render_zipper as z
from isthmus.report import render_zipper_apps as zapps
from isthmus.report import results, targets
from isthmus.report.blocks_collectives import (
    block_bandwidth,
    block_latency,
    block_selector,
    block_tcp_floor,
    block_zero,
    plot_bandwidth,
    plot_latency,
)
from isthmus.report.blocks_grid import block_grid

BLOCK = re.compile(
    r"(?P<open><!-- render (?P<name>[\w/.-]+) -->\n)(?P<body>.*?)(?P<close><!-- end render -->)",
    re.S,
)
FENCE = re.compile(r"(^```.*?^```[^\n]*$)", re.M | re.S)
MARKDOWN_GLOBS = ("README.md", "docs/**/*.md", "results/**/*.md")


# ---- registry ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    source: str  # the experiment whose results it renders
    text: Callable[[dict[str, Any]], str]
    plot: Callable[[dict[str, Any], Path], None] | None = None
    plot_file: str = ""


BLOCKS: dict[str, Block] = {
    "collectives/latency": Block(
        "collectives/latency", block_latency, plot_latency, "results/collectives/latency.png"
    ),
    "collectives/bandwidth": Block(
        "collectives/bandwidth",
        block_bandwidth,
        plot_bandwidth,
        "results/collectives/bandwidth.png",
    ),
    "collectives/tcp-floor": Block("collectives/tcp-floor", block_tcp_floor),
    "collectives/zero": Block("collectives/zero", block_zero),
    "collectives/latency-selector": Block("collectives/latency", block_selector),
    "collectives/bandwidth-selector": Block("collectives/bandwidth", block_selector),
    # every grid experiment there is (grid-2x2; the 8-rank ones one MPI a file)
    **{n: Block(n, block_grid) for n in all_names() if n.startswith("collectives/grid-")},
}


BLOCKS.update(
    {
        "net/selftest": Block("net/selftest", net.block_selftest, net.plot_selftest,
                              "results/net/selftest.png"),
        **{f"net/selftest-{v}": Block(f"net/selftest-{v}", net.block_selftest)
           for v in ("busy", "busy-fifo", "dilated", "mpi-dilated")},
        "overhead/overhead": Block("overhead/overhead", net.block_overhead, net.plot_overhead,
                                   "results/overhead/overhead.png"),
        "pio/bench": Block("pio/bench", apps.block_pio, apps.plot_pio, "results/pio/bench.png"),
        "pio/bench-wan": Block("pio/bench-wan", apps.block_pio, apps.plot_pio,
                               "results/pio/bench-wan.png"),
        "pio/mpiio": Block("pio/mpiio", mpiio.block_cases, mpiio.plot_cases,
                           "results/pio/mpiio.png"),
        "pio/two-phase": Block("pio/two-phase", mpiio.block_cases, mpiio.plot_cases,
                               "results/pio/two-phase.png"),
        "pio/two-phase-wan": Block("pio/two-phase-wan", mpiio.block_cases, mpiio.plot_cases,
                                   "results/pio/two-phase-wan.png"),
        "model/bcast": Block("model/bcast", apps.block_model, apps.plot_model,
                             "results/model/bcast-error.png"),
        "demo/time": Block("demo/time", apps.block_demo),
        "demo/shows": Block("demo/time", apps.block_demo_shows),
        "apps/layer": Block("apps/layer", apps.block_apps),
        "model/repeatability": Block("model/repeatability", apps.block_repeatability),
        "model/heuristic": Block("model/heuristic", apps.block_heuristic),
        "net/wait-mode": Block("net/wait-mode", net.block_wait_mode),
        "net/mpi-bandwidth": Block("net/mpi-bandwidth", net.block_mpi_bandwidth,
                                   net.plot_mpi_bandwidth, "results/net/mpi-bandwidth.png"),
        "adaptive/discovery": Block("adaptive/discovery", adaptive.block_discovery,
                                    adaptive.plot_discovery, "results/adaptive/discovery.png"),
        "adaptive/params": Block("adaptive/params", adaptive.block_params),
        "adaptive/discovery-growth": Block("adaptive/discovery-growth", adaptive.block_growth,
                                           adaptive.plot_growth,
                                           "results/adaptive/discovery-growth.png"),
        "adaptive/live": Block("adaptive/live", live.block_live, live.plot_live,
                               "results/adaptive/live.png"),
        "adaptive/live-random": Block("adaptive/live-random", live.block_random),
        "adaptive/live-dilated": Block("adaptive/live-dilated", live.block_live, live.plot_live,
                                       "results/adaptive/live-dilated.png"),
        "adaptive/discovery-dilated": Block("adaptive/discovery-dilated",
                                            adaptive.block_discovery),
        "robustness/soak": Block("robustness/soak", robustness.block_soak),
        "robustness/stall": Block("robustness/stall", robustness.block_stall),
        "robustness/races": Block("robustness/races", robustness.block_passes),
        "robustness/stress": Block("robustness/stress", robustness.block_passes),
        "dilation/weak-scaling": Block("dilation/weak-scaling", dil.block_weak_scaling),
        "dilation/interposition": Block("dilation/interposition", dil.block_interposition),
        "dilation/scale": Block("dilation/scale", dil.block_scale),
        "collectives/latency-dilated": Block("collectives/latency-dilated", block_latency),
        "collectives/latency-dilated-2x": Block("collectives/latency-dilated-2x", block_latency),
        "dilation/convergence-latency": Block("collectives/latency-dilated",
                                              dil.block_convergence),
        "zipper/p2p-dilated": Block("zipper/p2p-dilated", z.block_p2p),
        "zipper/p2p-dilated-2x": Block("zipper/p2p-dilated-2x", z.block_p2p),
        "dilation/convergence-zipper": Block("zipper/p2p-dilated", dil.block_convergence),
        "zipper/p2p-dilated-8": Block("zipper/p2p-dilated-8", z.block_p2p),
        "zipper/p2p-dilated-16": Block("zipper/p2p-dilated-16", z.block_p2p),
        "dilation/convergence-zipper-8-16": Block("zipper/p2p-dilated-8", dil.block_convergence),
        "dilation/extrapolation-zipper": Block("zipper/p2p-dilated", dil.block_extrapolation),
        "model/bcast-dilated": Block("model/bcast-dilated", apps.block_model),
        "model/bcast-dilated-2x": Block("model/bcast-dilated-2x", apps.block_model),
        "dilation/convergence-bcast": Block("model/bcast-dilated", dil.block_convergence),
        "net/wait-mode-dilated": Block("net/wait-mode-dilated", net.block_wait_mode),
        "zipper/p2p": Block("zipper/p2p", z.block_p2p, z.plot_p2p, "results/zipper/p2p.png"),
        "zipper/zippers": Block("zipper/zippers", z.block_zippers, z.plot_zippers,
                                "results/zipper/zippers.png"),
        "zipper/apps": Block("zipper/apps", zapps.block),
        "slurm/apps": Block("slurm/apps", slurm_blocks.block_apps),
        "zipper/collectives-openmpi": Block("zipper/collectives-openmpi", z.block_collectives,
                                            z.plot_collectives,
                                            "results/zipper/collectives-openmpi.png"),
        "zipper/collectives-mpich": Block("zipper/collectives-mpich", z.block_collectives,
                                          z.plot_collectives,
                                          "results/zipper/collectives-mpich.png"),
        z.COLL_DILATED: Block(z.COLL_DILATED, z.block_collectives, z.plot_collectives,
                              "results/zipper/collectives-dilated-8.png"),
    }
)  # fmt: skip


def render_block(name: str, where: Path | None = None) -> str:
    """The block's Markdown; its plot, if it has one, linked relative to `where`."""
    if name == "performance":
        return targets.block()
    if name == "zipper/paper":  # from several results files
        from isthmus.report import render_zipper_paper

        colls = {n: results.load_result(n) for n in z.COLL_EXPERIMENTS}
        return render_zipper_paper.block(
            results.load_result("zipper/p2p"), colls, results.load_result("zipper/apps")
        )
    if name == "coll/registry":  # from src/coll/registry.toml, not from results
        from isthmus.config import collectives

        return collectives.markdown_table()
    if name not in BLOCKS:
        raise UserError(
            f"unknown render block {name!r}: expected performance, coll/registry, zipper/paper or "
            f"{', '.join(BLOCKS)}"
        )
    b = BLOCKS[name]
    res = results.load_result(b.source)
    if not res:
        return results.missing(b.source)
    text = b.text(res)
    if b.plot_file:
        link = os.path.relpath(paths.ROOT / b.plot_file, (where or paths.ROOT / "x").parent)
        text = f"![{name}]({link})\n\n" + text
    return text


def markdown_files() -> list[Path]:
    found: list[Path] = []
    for pattern in MARKDOWN_GLOBS:
        found += sorted(paths.ROOT.glob(pattern))
    return [p for p in found if ".work" not in p.parts]


def header_problems() -> list[str]:
    """What is wrong with the provenance of the committed results files."""
    problems = []
    old = results.legacy()
    for path in sorted(results.RESULTS.rglob("*.json")):
        rel = provenance.relative(path)
        if ".work" in path.parts or results.is_legacy(path) or path.name == "summary.json":
            continue  # summary.json: rendered from results files (z.py)
        if rel in old:
            problems.append(
                f"{rel}: re-made by an experiment: remove it from {results.LEGACY_FILE.name}"
            )
        try:
            head = records.read_result(path)["header"]
        except UserError as e:
            problems.append(f"{e} (no provenance header: re-make it with 'isthmus experiment run')")
            continue
        if not head["clean"]:
            problems.append(f"{rel}: made from a dirty tree ({', '.join(head['dirty_files'][:3])})")
        if head["quick"]:
            problems.append(f"{rel}: made with --quick")
        if not provenance.is_ancestor(head["revision"]):
            problems.append(f"{rel}: revision {head['revision'][:12]} is not in this history")
    for rel in old:
        if not (paths.ROOT / rel).exists():
            problems.append(
                f"{results.LEGACY_FILE.name}: {rel} is listed but does not exist: remove it"
            )
    return problems


def render(check: bool = False) -> list[str]:
    """Rewrite (or, with check, compare) every block and plot; the problems found."""
    problems = header_problems() if check else []
    for md in markdown_files():
        text = md.read_text()
        where = provenance.relative(md)

        def fill(m: re.Match[str], where: str = where, md: Path = md) -> str:
            try:
                body = render_block(m["name"], md)
            except UserError as e:
                problems.append(f"{where}: {e}")
                return m.group(0)
            if body != m["body"] and check:
                problems.append(
                    f"{where}: block {m['name']} differs from its JSON "
                    "(run 'bin/isthmus experiment render')"
                )
            return m["open"] + body + m["close"]

        # fenced code (an example of a block in the docs) is left alone
        parts = FENCE.split(text)
        new = "".join(p if k % 2 else BLOCK.sub(fill, p) for k, p in enumerate(parts))
        if new != text and not check:
            atomic.write_text(md, new)
    for b in BLOCKS.values():
        res = results.load_result(b.source)
        if not (b.plot and res):
            continue
        out = paths.ROOT / b.plot_file
        if check:
            if not out.exists():
                problems.append(f"{b.plot_file}: missing (run 'bin/isthmus experiment render')")
        else:
            b.plot(res, out)
    p2p, zippers = results.load_result("zipper/p2p"), results.load_result("zipper/zippers")
    colls = {name: results.load_result(name) for name in (*z.COLL_EXPERIMENTS, z.COLL_DILATED)}
    apps_res = results.load_result("zipper/apps")
    if check:
        want = json.dumps(z.summary(p2p, zippers, colls, apps_res), indent=2) + "\n"
        have = z.summary_file()
        if not have.exists() or have.read_text() != want:
            problems.append(f"{provenance.relative(have)}: differs from its experiments' JSON "
                            "(run 'bin/isthmus experiment render')")  # fmt: skip
    else:
        z.write_summary(p2p, zippers, colls, apps_res)
    return problems
