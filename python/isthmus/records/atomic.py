"""Writing a file so that readers see the old content or the new, never half of it."""

from __future__ import annotations

from pathlib import Path


def write_text(path: Path, text: str) -> None:
    """Write beside the target, then rename over it (atomic on one file system)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
