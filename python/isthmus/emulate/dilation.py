"""The scale model (docs/dilation.md): run an experiment K times slower than real time.

With dilation K the router stretches every delay and serialization by K (virtual time in
src/net/router.c), each emulated host's processes run in a CPU cgroup capped at
cores / K of a CPU (this module), and the ranks read virtual time (libisthmus's
src/util/time_dilation.c). In virtual time every host then has its configured cores and every
link its configured latency and rate.

`emulation.dilation = "auto"` picks the smallest K (in steps of 1/4) at which the hosts'
cores, each scaled by 1/K, fit on this machine's CPUs beside the router's share.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from isthmus.config.platform import Platform
from isthmus.config.topology import MAX_DILATION
from isthmus.emulate.plan import make_plan, netns_name
from isthmus.errors import UserError

# What the router takes of a CPU while a dilated job runs: sampled each second over the
# dilated experiments, it averaged 0.1-0.3 of a CPU and peaked at 0.65 under the grid's
# slice at 1 Gbit/s and at 0.83 under the zipper's ping-pongs (the issue 44 note). It is
# not capped: where it takes more, the hosts get a little less than their share.
ROUTER_SHARE = 0.75
# The CFS period of a host's cgroup: short, so that a rank's share is smooth on the time
# scale of messages, but long enough that its quota stays at least the kernel's 1 ms and
# that the kernel can hold a rank to it: it throttles at its scheduler tick (4 ms at
# HZ=250, these machines'), so within a 2 ms period a computing rank overran its quota and
# lost 15-30% of its share; from 8 ms on it got it within 5% (the issue 44 note).
MIN_PERIOD_US = 8000
MIN_QUOTA_US = 1000
CGROUP_V1 = Path("/sys/fs/cgroup/cpu")
CGROUP_V2 = Path("/sys/fs/cgroup")
GROUP = "isthmus"


@dataclass(frozen=True)
class Dilation:
    factor: float
    why: str

    @property
    def active(self) -> bool:
        return self.factor > 1.0


def demanded_cores(platform: Platform) -> int:
    """Cores the emulated hosts stand for: every cluster host and every zipper host."""
    return sum(c.hosts * c.cores for c in platform.clusters) + sum(
        z.hosts for z in platform.zippers
    )


def auto_factor(platform: Platform, cpus: int | None = None, times: float = 1.0) -> Dilation:
    cpus = cpus or os.cpu_count() or 1
    want = demanded_cores(platform)
    free = max(cpus - ROUTER_SHARE, 0.25)
    k = max(1.0, math.ceil(4 * want / free) / 4) * times
    if k > MAX_DILATION:
        raise UserError(
            f"emulation.dilation = 'auto': the platform's {want} cores need K = {k:g} on "
            f"{cpus} CPUs; expected at most {MAX_DILATION:g} (fewer hosts or cores)"
        )
    twice = f" ({times:g} x auto)" if times != 1 else ""
    return Dilation(
        k,
        f"K = {k:g}{twice}: {want} emulated cores on {cpus} CPUs less {ROUTER_SHARE:g} "
        "for the router",
    )


def resolve(platform: Platform, cpus: int | None = None) -> Dilation:
    """The dilation factor in force for this platform, and why."""
    k = platform.emulation.dilation
    if isinstance(k, str):  # "auto" or "auto*M"
        return auto_factor(platform, cpus, float(k.partition("*")[2] or 1))
    return Dilation(k, f"K = {k:g}: emulation.dilation")


# ---- CPU caps ------------------------------------------------------------------------


def cgroup_root() -> Path:
    """Where this machine's CPU controller is: cgroup v1's cpu hierarchy, else v2."""
    if (CGROUP_V1 / "cpu.cfs_quota_us").exists():
        return CGROUP_V1 / GROUP
    return CGROUP_V2 / GROUP


def network_cgroup(name: str) -> Path:
    return cgroup_root() / name


def period_and_quota(cores: int, k: float) -> tuple[int, int]:
    """The CFS period and quota (us) that cap a host at cores / K of a CPU."""
    period = max(MIN_PERIOD_US, math.ceil(MIN_QUOTA_US * k / cores))
    return period, max(MIN_QUOTA_US, round(period * cores / k))


def require_writable() -> None:
    root = cgroup_root().parent
    if os.geteuid() != 0 or not os.access(root, os.W_OK):
        raise UserError(
            f"dilation K > 1 caps each emulated host's CPU in a cgroup, and {root} is not "
            "writable here (run as root, or use emulation.dilation = 1)"
        )


def make_cgroups(platform: Platform, name: str, k: float) -> Path:
    """One CPU cgroup per emulated host (named as its namespace), capped at cores / K."""
    require_writable()
    base = network_cgroup(name)
    v2 = base.parent.parent == CGROUP_V2
    if v2:
        with contextlib.suppress(OSError):  # the cpu controller for the children
            (CGROUP_V2 / "cgroup.subtree_control").write_text("+cpu")
    base.mkdir(parents=True, exist_ok=True)
    if v2:
        with contextlib.suppress(OSError):
            (base.parent / "cgroup.subtree_control").write_text("+cpu")
            (base / "cgroup.subtree_control").write_text("+cpu")
    cores = {c.name: c.cores for c in platform.clusters}
    for h in make_plan(platform).hosts:
        period, quota = period_and_quota(cores.get(h.cluster or "", 1), k)
        d = base / netns_name(name, h.name)
        d.mkdir(exist_ok=True)
        if v2:
            (d / "cpu.max").write_text(f"{quota} {period}")
        else:
            (d / "cpu.cfs_period_us").write_text(str(period))
            (d / "cpu.cfs_quota_us").write_text(str(quota))
    return base


def _tasks(d: Path) -> list[int]:
    try:
        return [int(x) for x in (d / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def remove_cgroups(name: str) -> list[str]:
    """Remove network NAME's cgroups; processes still in one are killed first (a rank left
    by a killed run). Returns the directories removed."""
    base = network_cgroup(name)
    if not base.is_dir():
        return []
    removed = []
    for d in sorted(p for p in base.iterdir() if p.is_dir()):
        for _ in range(50):
            pids = _tasks(d)
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)
        with contextlib.suppress(OSError):
            d.rmdir()
            removed.append(str(d))
    with contextlib.suppress(OSError):
        base.rmdir()
        removed.append(str(base))
    with contextlib.suppress(OSError):  # the group itself, when no other network has one
        base.parent.rmdir()
    return removed


def leftover_cgroups() -> list[str]:
    """Names of networks that have a cgroup directory here."""
    root = cgroup_root()
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
