"""pio's files on disk (docs/pio.md "Layout"): the layout server 0 keeps, and a striped
file written out whole, as one ordinary file (`isthmus pio export`), which any program
and the MPI's own MPI-IO then read (docs/mpiio.md)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from isthmus.errors import UserError

META = re.compile(r"isthmus-pio 1\s+stripe (\d+)\s+servers (\d+)\s*")


@dataclass(frozen=True)
class Layout:
    stripe: int
    servers: int


def layout(directory: Path, name: str) -> Layout:
    """The layout of file `name` of the servers' directory (DIR/server-0/NAME.pio-meta)."""
    meta = directory / "server-0" / f"{name}.pio-meta"
    try:
        text = meta.read_text()
    except OSError as e:
        raise UserError(f"{meta}: {e.strerror}: expected pio's layout of {name!r}") from None
    m = META.fullmatch(text)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise UserError(f"{meta}: expected 'isthmus-pio 1', 'stripe N', 'servers N'")
    return Layout(int(m.group(1)), int(m.group(2)))


def logical_end(lay: Layout, server: int, local_size: int) -> int:
    """The file size implied by `local_size` bytes in a server's data file (as
    pio_logical_end in src/pio/pio_layout.c)."""
    if local_size <= 0:
        return 0
    last = local_size - 1
    k = last // lay.stripe
    return (k * lay.servers + server) * lay.stripe + last % lay.stripe + 1


def export(directory: Path, name: str, out: Path) -> int:
    """Writes pio file `name` whole to `out` (written beside it, then renamed); its size."""
    lay = layout(directory, name)
    parts = [directory / f"server-{s}" / name for s in range(lay.servers)]
    for p in parts:
        if not p.is_file():
            raise UserError(f"{p}: missing: pio file {name!r} has {lay.servers} servers' parts")
    size = max(logical_end(lay, s, p.stat().st_size) for s, p in enumerate(parts))
    tmp = out.with_name(f".{out.name}.part")
    try:
        with tmp.open("wb") as w:
            w.truncate(size)
            for s, p in enumerate(parts):
                with p.open("rb") as r:
                    k = 0  # the server's k-th stripe is the file's stripe k * servers + s
                    while chunk := r.read(lay.stripe):
                        w.seek((k * lay.servers + s) * lay.stripe)
                        w.write(chunk)
                        k += 1
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return size
