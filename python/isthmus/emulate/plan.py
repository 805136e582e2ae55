"""The plan of an emulated network, made from a platform before anything is created: a
namespace and an address in 198.18.0.0/15 per host, the router's links with their
settings, and the router's configuration file (net.py creates what it says)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isthmus.config.platform import LinkModel, Platform
from isthmus.errors import UserError

NETWORK = "198.18.0.0/15"


PREFIX_LEN = 15


DEVICE = "ist0"


DEFAULT_MTU = 65000
# Dilated (docs/dilation.md), the devices' MTU: jumbo frames, as on many clusters' networks.
# The router forwards a packet whole, so every rate-limited queue on a route delays a
# message by one packet's serialization: at 1 Gbit/s a 65000-byte packet takes 520 us
# per queue (a message across nic, wan and lan paid 0.7-0.9 ms of virtual time beyond its
# bytes at the rate, both MPIs; 0.3-0.4 ms at 9000 bytes). Undilated the router could
# not forward 7x more packets; dilated by K it has K times the time for each.
DILATED_MTU = 9000


NIC_QUEUE = 64 << 20  # bytes a host may have waiting at its own port (make_plan)


DEFAULT_NAME = "isthmus"


CONTROL_HOST = "ctl"


NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,19}")


MAX_PER_OCTET = 254


@dataclass(frozen=True)
class Host:
    name: str  # "east0", "gate0", or "ctl" (where the launcher runs)
    cluster: str | None  # None for the control host
    address: str
    ranks: int
    zipper: bool = False


@dataclass(frozen=True)
class Link:
    name: str  # "lan:east0", "wan:east->west", "up:east", "down:west", "zip:gate0<-east"
    model: LinkModel


@dataclass
class NetworkPlan:
    hosts: list[Host]
    links: list[Link]
    routes: dict[tuple[int, int], list[int]]  # (src host, dst host) -> link indices

    def host_index(self, name: str) -> int:
        return next(i for i, h in enumerate(self.hosts) if h.name == name)


def netns_name(net: str, host: str) -> str:
    return f"ist-{net}-{host}"


def check_name(name: str) -> str:
    if not NAME_RE.fullmatch(name):
        raise UserError(f"network name {name!r}: expected 1-20 lowercase letters, digits or '-'")
    return name


def make_plan(platform: Platform) -> NetworkPlan:
    """Hosts, links and routes of a platform's emulated network."""
    if not platform.emulated:
        raise UserError(
            f"{platform.path}: clusters place ranks by host pattern (a real site): "
            "there is nothing to emulate"
        )
    if len(platform.clusters) + len(platform.zippers) > MAX_PER_OCTET:
        raise UserError(
            f"{platform.path}: {len(platform.clusters)} clusters and zippers exhaust "
            f"the address range {NETWORK} (at most {MAX_PER_OCTET})"
        )
    hosts = [Host(CONTROL_HOST, None, "198.18.0.1", 0)]
    for c, cluster in enumerate(platform.clusters, 1):
        if cluster.hosts > MAX_PER_OCTET:
            raise UserError(
                f"{platform.path}: clusters.{cluster.name}.hosts = {cluster.hosts} "
                f"exhausts the addresses of a cluster (at most {MAX_PER_OCTET})"
            )
        hosts += [
            Host(f"{cluster.name}{i}", cluster.name, f"198.18.{c}.{i + 1}", cluster.ranks_per_host)
            for i in range(cluster.hosts)
        ]
    for z, zipper in enumerate(platform.zippers, len(platform.clusters) + 1):
        if zipper.hosts > MAX_PER_OCTET:
            raise UserError(f"{platform.path}: zippers.{zipper.name}.hosts exhausts its addresses")
        hosts += [
            Host(
                f"{zipper.name}{i}",
                zipper.name,
                f"198.18.{z}.{i + 1}",
                zipper.ranks_per_host,
                zipper=True,
            )
            for i in range(zipper.hosts)
        ]

    links: list[Link] = []
    index: dict[str, int] = {}

    def link(name: str, model: LinkModel) -> int:
        index[name] = len(links)
        links.append(Link(name, model))
        return index[name]

    clusters = {c.name: c for c in platform.clusters}
    zippers = {z.name: z for z in platform.zippers}
    port: dict[str, int | None] = {}  # the link into each host, None when not emulated
    nic: dict[str, int | None] = {}  # the link out of each host, None when not emulated
    # A zipper host is dual-homed: one interface in each cluster it joins, each full duplex.
    # The zipper's link is what comes in on each side ("zip:gate0<-left": its latency and
    # rate, its queue); what the host sends goes out at once (as from a host of the other
    # side: it came in at the link's rate) and meets only the destination's port.
    zport: dict[tuple[str, str], int] = {}
    for h in hosts[1:]:
        if h.zipper:
            zipper = zippers[h.cluster or ""]
            if zipper.link:
                for facing in zipper.clusters:
                    zport[(h.name, facing)] = link(f"zip:{h.name}<-{facing}", zipper.link)
            continue
        cl = clusters[h.cluster or ""]
        model = cl.lan if cl.lan_emulated else None
        port[h.name] = link(f"lan:{h.name}", model) if model else None
        # A host sends at its port's rate whatever the destinations (a NIC's egress): it
        # queues there, never drops (a real host's TCP waits for its NIC).
        nic[h.name] = (
            link(f"nic:{h.name}", LinkModel(bandwidth=model.bandwidth, queue=NIC_QUEUE,
                                             cut_through=True))
            if model and model.bandwidth
            else None
        )  # fmt: skip

    def side(z: Host, other: Host) -> str:
        """The cluster whose interface of zipper host z faces host other."""
        if other.zipper:
            return zippers[z.cluster or ""].clusters[0]
        return other.cluster or ""

    for (src, dst), model in platform.wan.items():
        link(f"wan:{src}->{dst}", model)
    for cl in platform.clusters:
        if cl.uplink:
            link(f"up:{cl.name}", cl.uplink)
            link(f"down:{cl.name}", cl.uplink)

    routes: dict[tuple[int, int], list[int]] = {}
    for i, a in enumerate(hosts):
        for j, b in enumerate(hosts):
            if i == j:
                continue
            if CONTROL_HOST in (a.name, b.name):
                routes[(i, j)] = []  # launcher traffic is not emulated
                continue
            if b.zipper:
                into_b = [p] if (p := zport.get((b.name, side(b, a)))) is not None else []
            else:
                into_b = [p] if (p := port[b.name]) is not None else []
            out_of_a = [] if a.zipper else [p] if (p := nic[a.name]) is not None else []
            if a.cluster == b.cluster or a.zipper or b.zipper:
                joined = a.cluster == b.cluster or _zipper_joins(zippers, a, b)
                if joined:
                    routes[(i, j)] = out_of_a + into_b
                continue
            wan = index.get(f"wan:{a.cluster}->{b.cluster}")
            if wan is None:
                continue  # disjoint networks: only zipper hosts reach across
            path = []
            if f"up:{a.cluster}" in index:
                path.append(index[f"up:{a.cluster}"])
            path.append(wan)
            if f"down:{b.cluster}" in index:
                path.append(index[f"down:{b.cluster}"])
            routes[(i, j)] = out_of_a + path + into_b
    return NetworkPlan(hosts, links, routes)


def _zipper_joins(zippers: dict[str, Any], a: Host, b: Host) -> bool:
    """A zipper host reaches the hosts of every cluster it joins (and other zippers)."""
    if a.zipper and b.zipper:
        return True
    z, other = (a, b) if a.zipper else (b, a)
    return other.cluster in zippers[z.cluster or ""].clusters


def router_config(
    p: NetworkPlan,
    net: str,
    control: Path,
    spin_ns: int,
    dilation: float = 1.0,
    sched: str = "nice",
) -> str:
    lines = [
        "# isthmus-router configuration, written by `isthmus net up`",
        f"control {control}",
        f"spin_ns {spin_ns}",
        f"dilation {dilation:.9g}",
        f"sched {sched}",
    ]
    for i, h in enumerate(p.hosts):
        lines.append(f"host {i} {netns_name(net, h.name)} {h.address}")
    for i, lk in enumerate(p.links):
        lines.append(
            f"link {i} {lk.name} {link_settings(lk.model)} reorder=0 "
            f"cut_through={int(lk.model.cut_through)} seed={i + 1}"
        )
    for (s, d), hops in sorted(p.routes.items()):
        lines.append(f"route {s} {d} {','.join(map(str, hops)) or '-'}")
    return "\n".join(lines) + "\n"


# The router's name for each platform link key.
ROUTER_KEYS = {
    "latency": "latency_ns",
    "bandwidth": "rate",
    "jitter": "jitter_ns",
    "jitter_distribution": "dist",
    "queue": "queue",
    "loss": "loss",
    "loss_burst": "loss_burst",
}


def link_settings(m: LinkModel, only: Iterable[str] = ROUTER_KEYS) -> str:
    """A link model as the router's key=value settings (all keys, or those in `only`)."""
    values = {
        "latency": round(m.latency * 1e9),
        "bandwidth": f"{m.bandwidth or 0:.1f}",
        "jitter": round(m.jitter * 1e9),
        "jitter_distribution": m.jitter_distribution,
        "queue": m.queue,
        "loss": f"{m.loss:.9g}",
        "loss_burst": f"{m.loss_burst:.9g}",
    }
    return " ".join(f"{ROUTER_KEYS[k]}={values[k]}" for k in only)
