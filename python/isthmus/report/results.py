"""The results files as the rendered blocks read them, and the formats every block uses:
one place for loading a results file (or its version at a commit), its provenance line,
Markdown tables and numbers with units."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isthmus import records
from isthmus.config import paths
from isthmus.config.units import format_size
from isthmus.experiment import provenance

if TYPE_CHECKING:
    pass


RESULTS = paths.ROOT / "results"
LEGACY_FILE = paths.ROOT / "experiments" / "legacy.toml"


def load_result(name: str) -> dict[str, Any] | None:
    """The results file of experiment NAME; None when it is not made (or is legacy)."""
    path = RESULTS / f"{name}.json"
    if not path.exists() or is_legacy(path):
        return None
    return records.read_result(path)


def load_result_at(name: str, rev: str) -> dict[str, Any] | None:
    """The results file of experiment NAME as commit `rev` had it (None if it had none)."""
    text = provenance.file_at(rev, f"results/{name}.json")
    if text is None:
        return None
    data: dict[str, Any] = json.loads(text)
    records.check(data, "result", f"results/{name}.json at {rev}")
    return data


def is_legacy(path: Path) -> bool:
    """Listed in experiments/legacy.toml and still without a provenance header."""
    return provenance.relative(path) in legacy() and "header" not in records.read_json(path)


def made_by(res: dict[str, Any]) -> str:
    h = res["header"]
    reps = h["repetitions"]
    return (
        f"Made by `{h['command']}` at {h['revision'][:12]} on {h['date'][:10]} "
        f"({h['machine']['cores']} cores, {h['machine']['cpu']}; "
        f"{', '.join(h['mpi'].values()) or 'no MPI'}), {reps} repetition{'s' * (reps > 1)}, "
        f"{max(1, round(h.get('duration_s', 0) / 60))} min: `results/{h['experiment']}.json`."
    )


def missing(name: str) -> str:
    return f"*Not measured yet: run `bin/isthmus experiment run {name}`.*\n"


def table(head: list[str], rows: list[list[str]], right_from: int = 1) -> str:
    align = ["---" if i < right_from else "---:" for i in range(len(head))]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def ms(us: float) -> str:
    return f"{us / 1e3:.2f} ms"


def sec(s: float) -> str:
    return f"{s:.3f} s"


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def size_or_dash(b: float | None) -> str:
    """A byte count rounded for tables ("31.7MiB"), or "-" where none was measured."""
    return "-" if b is None else format_size(int(b))


def size(b: int) -> str:
    """Exact sizes for tables ("1500 B", "64 KiB"); units.format_size rounds (1.46KiB)."""
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"


# ---- collectives/latency -------------------------------------------------------------


def legacy() -> dict[str, str]:
    """Results files made before `isthmus experiment`: path -> the experiment to replace it."""
    data = tomllib.loads(LEGACY_FILE.read_text()) if LEGACY_FILE.exists() else {}
    return {f["path"]: f["replaced_by"] for f in data.get("file", [])}
