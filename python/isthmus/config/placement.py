"""The placement file: which host every world rank runs on, and the cluster it counts in
(`isthmus run --placement FILE`; written by `isthmus profile advise`; docs/zipper.md).

    # isthmus placement
    platform = "zipper"
    hosts = ["left0", "gate0", "right0", "right1", "left1", "gate0"]
    clusters = ["left", "left", "right", "right", "left", "right"]

`hosts[r]` is world rank r's emulated host; every host of the platform appears exactly
as many times as it has ranks (ranks_per_host), so a placement only moves ranks between
the platform's slots. `clusters[r]` is the cluster the rank counts in: a cluster host's
own cluster, and on a zipper host one of the clusters the zipper joins (whose site's job
the rank joins). `clusters` may be left out: each host's own cluster, a zipper host's
first.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

from isthmus import records
from isthmus.config.topology import Platform, Slot
from isthmus.errors import UserError

HEADER = "# isthmus placement (docs/zipper.md): isthmus run --placement FILE"


def host_clusters(platform: Platform) -> dict[str, tuple[str, ...]]:
    """Every emulated host that holds ranks, and the clusters a rank on it may count in."""
    out: dict[str, tuple[str, ...]] = {}
    for c in platform.clusters:
        out.update({f"{c.name}{i}": (c.name,) for i in range(c.hosts) if c.ranks_per_host})
    for z in platform.zippers:
        out.update({f"{z.name}{i}": z.clusters for i in range(z.hosts) if z.ranks_per_host})
    return out


def load(path: Path, platform: Platform) -> Platform:
    """The platform with the file's placement, or a one-line error naming what is wrong."""
    raw = records.read_toml(path, "placement file")
    where = f"--placement {path}"
    unknown = sorted(set(raw) - {"platform", "hosts", "clusters"})
    if unknown:
        raise UserError(f"{where}: unknown key {unknown[0]!r} (expected platform, hosts, clusters)")
    if raw.get("platform", platform.name) != platform.name:
        raise UserError(f"{where}: made for platform {raw['platform']!r}, not {platform.name!r}")
    hosts = raw.get("hosts")
    default = platform.default_slots()
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise UserError(f"{where}: hosts: expected a list of host names, one per world rank")
    if len(hosts) != len(default):
        raise UserError(
            f"{where}: hosts: {len(hosts)} ranks, the platform has {len(default)}: expected "
            "one host per world rank"
        )
    allowed = host_clusters(platform)
    for h in hosts:
        if h not in allowed:
            raise UserError(
                f"{where}: host {h!r}: not a host with ranks on {platform.name} (expected one "
                f"of {', '.join(allowed)})"
            )
    have, want = Counter(hosts), Counter(s.host for s in default)
    for h in allowed:
        if have[h] != want[h]:
            raise UserError(
                f"{where}: host {h!r} holds {have[h]} ranks, the platform gives it {want[h]}"
            )
    clusters = raw.get("clusters", [allowed[h][0] for h in hosts])
    if not isinstance(clusters, list) or len(clusters) != len(hosts):
        raise UserError(f"{where}: clusters: expected a list of cluster names, one per host")
    for r, (h, c) in enumerate(zip(hosts, clusters, strict=True)):
        if c not in allowed[h]:
            raise UserError(
                f"{where}: rank {r} on {h} counted in {c!r}: expected {' or '.join(allowed[h])}"
            )
    slots = tuple(Slot(h, c) for h, c in zip(hosts, clusters, strict=True))
    return dataclasses.replace(platform, placement=slots)


def write(path: Path, platform: Platform, slots: list[Slot], comment: str = "") -> None:
    """A placement file (atomically) that `load` reads back as these slots."""

    def strings(xs: list[str]) -> str:
        return "[" + ", ".join(f'"{x}"' for x in xs) + "]"

    lines = [HEADER]
    lines += [f"# {line}" for line in comment.splitlines()]
    lines += [
        f'platform = "{platform.name}"',
        f"hosts = {strings([s.host for s in slots])}",
        f"clusters = {strings([s.cluster for s in slots])}",
    ]
    records.atomic.write_text(path, "\n".join(lines) + "\n")
