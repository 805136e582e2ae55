"""Wrap the overhead benchmark's output with its provenance, and plot the results.

overhead_results.py RAW OUT.json COMMAND      add machine, git revision, date, command
overhead_results.py --plot A.json B.json -o overhead.png
"""

from __future__ import annotations

import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from isthmus.paths import git_revision

TARGETS_NS = {"layer_on": 25.0, "layer_off": 3.0}
BENCHES = {
    "pingpong_8B_round_trip": "8-byte ping-pong round trip, 2 ranks",
    "allreduce_8B": "8-byte Allreduce, 2 ranks",
    "allreduce_8B_comm_self": "8-byte Allreduce on MPI_COMM_SELF",
}


def wrap(raw: Path, out: Path, command: str) -> None:
    data = json.loads(raw.read_text())
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    models = [line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")]
    cpu = models[0] if models else platform.processor()
    data["provenance"] = {
        "command": command,
        "git_revision": git_revision(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release()},
        "targets_ns_per_call": TARGETS_NS,
    }
    out.write_text(json.dumps(data, indent=1) + "\n")
    for bench in BENCHES:
        added = data[bench]["added_per_call"]
        print(
            f"{out.name}: {bench}: added per call (median, p10-p90 of paired differences): "
            + ", ".join(
                f"{m} {added[m]['median_ns']:.2f} ns ({added[m]['p10_ns']:.1f} to "
                f"{added[m]['p90_ns']:.1f})"
                for m in ("layer_off", "layer_on")
            )
        )


def plot(files: list[Path], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4), constrained_layout=True)
    modes = ("native", "layer_off", "layer_on")
    for ax, (bench, title) in zip(axes, BENCHES.items(), strict=True):
        width = 0.25
        for i, f in enumerate(files):
            d = json.loads(f.read_text())
            stats = d[bench]["per_mode"]
            med = [stats[m]["median_ns"] for m in modes]
            lo = [stats[m]["median_ns"] - stats[m]["p10_ns"] for m in modes]
            hi = [stats[m]["p90_ns"] - stats[m]["median_ns"] for m in modes]
            xs = [j + (i - 0.5) * width for j in range(len(modes))]
            label = d["mpi_library"].split(",")[0].split(" Version")[0]
            ax.bar(xs, med, width, yerr=[lo, hi], capsize=3, label=label)
        ax.set_xticks(
            range(len(modes)), ["PMPI (no layer)", "layer, profiling off", "layer, profiling on"]
        )
        ax.set_ylabel("time per iteration (ns): median, p10-p90")
        ax.set_title(title)
        ax.legend()
    fig.suptitle("libisthmus overhead (make bench-overhead)")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    if sys.argv[1] == "--plot":
        plot([Path(a) for a in sys.argv[2:-2]], Path(sys.argv[-1]))
    else:
        wrap(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])
