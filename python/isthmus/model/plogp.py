"""P-LogP parameters per link class: reading, writing, fitting from `logp` measurements, and
deriving them from a platform file.

A link class is "lan" (two ranks of one cluster) or "wan" (ranks of two clusters): the l and
w parameter sets of the P-LogP paper. Each holds the latency L and the send overhead os(m),
receive overhead or(m) and gap g(m) as piecewise-linear functions of the message size m,
given at measured sizes; between sizes they are interpolated linearly, beyond the last size
extrapolated along the last segment. The file format (docs/model.md) is line-based text so
that libisthmus reads it with a few lines of C:

    isthmus-plogp 1
    platform two-clusters
    source logp bench.jsonl; MPICH Version: 4.0.2
    class wan L 5012.5
    point wan 0 os 2.1 or 2.0 g 3.2     # bytes, then microseconds
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isthmus import records
from isthmus.config.platform import LinkModel, Platform
from isthmus.errors import UserError
from isthmus.records import atomic, read_bench

MAGIC = "isthmus-plogp 1"
CLASSES = ("lan", "wan")
# Derived from a platform: a message costs the CPU a fixed overhead plus one memory copy.
DERIVED_OVERHEAD_US = 2.0
DERIVED_COPY_BYTES_PER_US = 5000.0  # 5 GB/s


@dataclass(frozen=True)
class LinkClass:
    """One link class: L in microseconds; os, or and g in microseconds at `sizes` bytes."""

    L: float
    sizes: tuple[int, ...]
    os_: tuple[float, ...]
    or_: tuple[float, ...]
    g_: tuple[float, ...]

    def os(self, m: float) -> float:
        return interpolate(self.sizes, self.os_, m)

    def or_at(self, m: float) -> float:
        return interpolate(self.sizes, self.or_, m)

    def g(self, m: float) -> float:
        return interpolate(self.sizes, self.g_, m)

    def r(self, m: float) -> float:
        """Receiver completion time of one message sent at time 0 (P-LogP r(m))."""
        return self.L + self.g(m)


@dataclass(frozen=True)
class Params:
    platform: str
    source: str
    classes: dict[str, LinkClass] = field(default_factory=dict)

    def link(self, name: str) -> LinkClass:
        try:
            return self.classes[name]
        except KeyError:
            raise UserError(
                f"P-LogP parameters from {self.source}: no {name!r} link class "
                f"(have {', '.join(sorted(self.classes)) or 'none'})"
            ) from None


def interpolate(xs: tuple[int, ...], ys: tuple[float, ...], x: float) -> float:
    """Piecewise-linear through the points, extended along the first segment, and beyond
    the last point with the steeper of the last segment and the line through the origin
    (y/x), never below 0. libisthmus's src/model/plogp_params.c computes exactly the same
    (same operations, same order), so that both optimizers choose alike."""
    n = len(xs)
    if n == 1:
        return ys[0]
    i = 1
    while i < n - 1 and xs[i] < x:
        i += 1
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    y = y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    if x > x1:
        # beyond the largest measured size, never a slope below the mean cost per byte so
        # far: one noisy last point (a TCP loss) must not make larger messages cheaper
        slope = (y1 - y0) / (x1 - x0)
        if x1 > 0 and y1 / x1 > slope:
            slope = y1 / x1
        y = y1 + slope * (x - x1)
    return y if y > 0 else 0.0


# ---------------------------------------------------------------------------------------
# The file format


def write(params: Params, path: Path) -> None:
    lines = [
        "# P-LogP parameters per link class (docs/model.md): L and, per message size in",
        "# bytes, send overhead os, receive overhead or and gap g, all in microseconds.",
        MAGIC,
        f"platform {params.platform}",
        f"source {params.source}",
    ]
    for name, c in params.classes.items():
        lines.append(f"class {name} L {c.L:.3f}")
        for m, o_s, o_r, g in zip(c.sizes, c.os_, c.or_, c.g_, strict=True):
            lines.append(f"point {name} {m} os {o_s:.3f} or {o_r:.3f} g {g:.3f}")
    atomic.write_text(path, "\n".join(lines) + "\n")


def read(path: Path) -> Params:
    text = records.read_text(path, "P-LogP parameter file")
    lines = [(n, ln.split("#", 1)[0].split()) for n, ln in enumerate(text.splitlines(), 1)]
    lines = [(n, w) for n, w in lines if w]
    if not lines or " ".join(lines[0][1]) != MAGIC:
        raise UserError(f"{path}: not a P-LogP parameter file (expected a first line {MAGIC!r})")
    platform, source = "", str(path)
    latency: dict[str, float] = {}
    points: dict[str, list[tuple[int, float, float, float]]] = {}
    for n, w in lines[1:]:
        try:
            if w[0] == "platform" and len(w) == 2:
                platform = w[1]
            elif w[0] == "source":
                source = " ".join(w[1:])
            elif w[0] == "class" and len(w) == 4 and w[2] == "L":
                latency[w[1]] = float(w[3])
                points.setdefault(w[1], [])
            elif w[0] == "point" and len(w) == 9 and w[3:9:2] == ["os", "or", "g"]:
                points.setdefault(w[1], []).append(
                    (int(w[2]), float(w[4]), float(w[6]), float(w[8]))
                )
            else:
                raise ValueError
        except ValueError:
            raise UserError(
                f"{path}:{n}: expected 'platform NAME', 'source TEXT', 'class NAME L US' or "
                f"'point NAME BYTES os US or US g US', got {' '.join(w)!r}"
            ) from None
    classes = {}
    for name, pts in points.items():
        if name not in latency:
            raise UserError(f"{path}: points of class {name!r} but no 'class {name} L US' line")
        pts.sort()
        if not pts or len({p[0] for p in pts}) != len(pts):
            raise UserError(f"{path}: class {name!r} needs points at distinct sizes")
        classes[name] = LinkClass(
            latency[name],
            tuple(p[0] for p in pts),
            tuple(p[1] for p in pts),
            tuple(p[2] for p in pts),
            tuple(p[3] for p in pts),
        )
    return Params(platform, source, classes)


def check_platform(params: Params, platform: Platform, path: Path) -> None:
    if params.platform and params.platform != platform.name:
        raise UserError(
            f"{path}: parameters of platform {params.platform!r}, not of {platform.name!r} "
            f"({platform.path}): fit them from a benchmark run on this platform"
        )


# ---------------------------------------------------------------------------------------
# Fitting measurements and deriving from a platform


def fit(bench_file: Path) -> Params:
    """Parameters from the records of the `logp` benchmark: per class and size, the mean
    of every run in the file (the program's own stopping rule made each mean precise);
    L = RTT(0)/2 - g(0) as the program reports it, averaged likewise."""
    header, records = read_bench(bench_file)
    if header.get("benchmark") != "logp":
        raise UserError(
            f"{bench_file}: results of {header.get('benchmark')!r}, expected the logp benchmark"
        )
    by_size: dict[str, dict[int, list[dict[str, Any]]]] = {}
    latency: dict[str, list[float]] = {}
    for r in records:
        cls = str(r.get("class"))
        if r.get("record") == "logp":
            by_size.setdefault(cls, {}).setdefault(int(r["bytes"]), []).append(r)
        elif r.get("record") == "logp_latency":
            latency.setdefault(cls, []).append(float(r["L_us"]))
    classes = {}
    for cls, sizes in by_size.items():
        if cls not in latency:
            raise UserError(
                f"{bench_file}: class {cls!r} has no latency record: measure from size 0 "
                "(the logp default --min-size 0)"
            )
        ms = sorted(sizes)

        def avg(key: str, m: int, runs: dict[int, list[dict[str, Any]]] = sizes) -> float:
            return statistics.fmean(float(x[key]) for x in runs[m])

        classes[cls] = LinkClass(
            statistics.fmean(latency[cls]),
            tuple(ms),
            tuple(avg("os_us", m) for m in ms),
            tuple(avg("or_us", m) for m in ms),
            tuple(avg("g_us", m) for m in ms),
        )
    if not classes:
        raise UserError(f"{bench_file}: no logp measurements")
    lib = str(header.get("mpi_library", "")).split(",")[0]
    return Params(str(header.get("platform", "")), f"logp {bench_file.name}; {lib}", classes)


def _derived(links: list[LinkModel], sizes: tuple[int, ...]) -> LinkClass:
    latency = sum(lk.latency for lk in links) * 1e6
    rates = [lk.bandwidth for lk in links if lk.bandwidth]
    o = tuple(DERIVED_OVERHEAD_US + m / DERIVED_COPY_BYTES_PER_US for m in sizes)
    g = tuple(
        ov + (m / (min(rates) / 1e6) if rates else 0.0) for m, ov in zip(sizes, o, strict=True)
    )
    return LinkClass(latency, sizes, o, o, g)


def from_platform(platform: Platform) -> Params:
    """Parameters from the configured links along the emulated routes: L is the sum of the
    one-way latencies on the path; os(m) = or(m) = a fixed overhead plus a memory copy;
    g(m) = os(m) plus m over the narrowest rate. The LAN class is a path inside the first
    cluster, the WAN class the path from the first cluster to the second (uplink,
    wide-area link, downlink, LAN port), or through the zipper host that joins them."""
    sizes = (0, *(1 << i for i in range(0, 27)))  # up to 64 MiB
    first = platform.clusters[0].name
    classes = {"lan": _derived(platform.route(first, first) or [], sizes)}
    if len(platform.clusters) >= 2:
        second = platform.clusters[1].name
        path = platform.route(first, second) or platform.forwarded_route(first, second)
        if path is not None:
            classes["wan"] = _derived(path, sizes)
    return Params(platform.name, f"platform {platform.path.name}", classes)
