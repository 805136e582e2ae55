"""What a platform file describes, once read: clusters and their LANs, wide-area links,
zipper hosts, I/O servers, and the layer's, the collectives' and TCP's settings
(platform.py reads the file into these)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from isthmus.config import collectives as coll_registry
from isthmus.errors import UserError

JITTER_DISTRIBUTIONS = ("uniform", "normal")


COLLECTIVES_MODES = ("native", "isthmus")


COLLECTIVE_SELECTIONS = ("model", "always")


WAIT_MODES = ("auto", "spin", "sleep")


PLACEMENTS = ("block", "round-robin")
# layer.clusters: the platform's clusters, or the layer measures them (docs/layer.md)
CLUSTER_SOURCES = ("platform", "auto")


LINK_KEYS = (
    "latency", "bandwidth", "jitter", "jitter_distribution", "loss", "loss_burst", "queue", "mtu",
)  # fmt: skip


MTU_RANGE = (1280, 65535)  # what the emulated devices take (isthmus net up --mtu)


@dataclass(frozen=True)
class LinkModel:
    """One direction of a link. bandwidth None means no rate limit."""

    latency: float = 0.0  # one-way, seconds
    bandwidth: float | None = None  # bytes per second
    jitter: float = 0.0  # seconds
    jitter_distribution: str = "uniform"
    loss: float = 0.0  # probability that a packet is lost
    loss_burst: float = 1.0  # mean length of a loss burst (1: independent losses)
    queue: int = 1 << 20  # drop-tail queue, bytes
    # Largest packet on the link, bytes; None: the emulated devices' MTU. Hosts send
    # packets no larger than the smallest MTU on their route (net.py).
    mtu: int | None = None
    # A packet goes on to the next link when its serialization starts, not when it ends:
    # a host's own port (net.py), which limits its sending rate without a second
    # store-and-forward delay. Not a platform key.
    cut_through: bool = False


# clusters.NAME.launcher: the MPI's own launcher (mpirun, mpiexec), or the cluster's Slurm
LAUNCHERS = ("mpi", "slurm")


@dataclass(frozen=True)
class BatchSystem:
    """How a cluster's ranks are started (docs/slurm.md): by the MPI's own launcher, or by
    the cluster's Slurm, whose controller runs on the login host (default: the cluster's
    first host; a zipper host joining the cluster can be it) and whose jobs go to
    `partition`."""

    launcher: str = "mpi"
    login: str | None = None
    partition: str = "batch"


@dataclass(frozen=True)
class Cluster:
    name: str
    hosts: int  # emulated hosts (0 on a real site, where patterns place ranks)
    ranks_per_host: int
    lan: LinkModel
    lan_emulated: bool
    host_patterns: tuple[str, ...]
    uplink: LinkModel | None
    cores: int = 1  # cores of each host, in the scale model (emulation.dilation)
    batch: BatchSystem = field(default_factory=BatchSystem)

    @property
    def ranks(self) -> int:
        return self.hosts * self.ranks_per_host


@dataclass(frozen=True)
class Zipper:
    name: str
    clusters: tuple[str, ...]
    hosts: int
    ranks_per_host: int
    link: LinkModel | None  # the forwarding path between the zipper's two sides


@dataclass(frozen=True)
class IoServers:
    servers: int
    cluster: str | None
    directory: str
    stripe: int
    mpiio: bool = False  # the servers hidden in the job, MPI-IO of "pio:" files on them
    two_phase: str = "auto"  # collective writes by aggregators per cluster: auto, on, off
    strategy: str = ""  # the scheduling strategy (docs/pio.md); "": pio's default (hash)


@dataclass(frozen=True)
class LayerSettings:
    collectives: str = "native"
    wait: str = "auto"
    profile: bool = False
    placement: str = "block"  # how world ranks map onto clusters
    clusters: str = "platform"  # "auto": the layer finds the clusters by measuring


# The WAN-aware collectives by their selector names (src/coll/registry.toml).
COLLECTIVE_NAMES = coll_registry.names()


@dataclass(frozen=True)
class CollectiveSettings:
    """The [collectives] table: the selector of the WAN-aware collectives (docs/collectives.md)."""

    disable: tuple[str, ...] = ()
    algorithm: tuple[tuple[str, str], ...] = ()  # (collective, algorithm) forced
    # forced wide-area segment sizes in bytes: ("", bytes) for every collective with one,
    # then (collective, bytes) for one collective
    segment: tuple[tuple[str, int], ...] = ()
    log: bool = False
    params: Path | None = None  # a P-LogP parameter file; default: derived from the platform
    # "model": ours only where predicted faster than the MPI's own; "always": wherever it applies
    select: str = "model"
    tuning: Path | None = None  # measured choices (isthmus coll tune); they win over the model
    # live adaptation (src/coll/hier_adapt.c): the choices follow a changing wide area,
    # checked every adapt_every decided calls
    adapt: bool = False
    adapt_every: int = 8


@dataclass(frozen=True)
class TcpSettings:
    """The [tcp] table: the emulated hosts' TCP (per-namespace sysctls, docs/net.md). None:
    the machine's own setting."""

    congestion_control: str | None = None
    slow_start_after_idle: bool | None = None


MAX_DILATION = 1000.0


@dataclass(frozen=True)
class EmulationSettings:
    """The scale model (docs/dilation.md): run K times slower than real time, each host
    capped at its cores / K of a CPU, the network scaled by K. "auto" is resolved by
    isthmus.emulate.dilation before anything starts."""

    dilation: float | str = 1.0


@dataclass(frozen=True)
class Slot:
    """Where one world rank runs: its emulated host, and the cluster it counts in (whose
    site's job it joins; on a zipper host, one of the clusters the zipper joins)."""

    host: str  # "left0", "gate0"
    cluster: str


@dataclass(frozen=True)
class Platform:
    name: str
    path: Path
    description: str
    clusters: tuple[Cluster, ...]
    wan: dict[tuple[str, str], LinkModel]  # ordered (from, to) pairs with a direct link
    zippers: tuple[Zipper, ...] = ()
    io: IoServers | None = None
    layer: LayerSettings = field(default_factory=LayerSettings)
    collectives: CollectiveSettings = field(default_factory=CollectiveSettings)
    tcp: TcpSettings = field(default_factory=TcpSettings)
    emulation: EmulationSettings = field(default_factory=EmulationSettings)
    # every world rank's slot, from a placement file (isthmus run --placement); None: the
    # default (rank_slots)
    placement: tuple[Slot, ...] | None = None

    @property
    def total_ranks(self) -> int:
        return sum(c.ranks for c in self.clusters) + sum(
            z.hosts * z.ranks_per_host for z in self.zippers
        )

    @property
    def emulated(self) -> bool:
        """True when every cluster gives its hosts (not host-name patterns); a real site
        with no clusters at all (the layer finds them: layer.clusters = "auto") is not."""
        return bool(self.clusters) and all(c.hosts > 0 for c in self.clusters)

    def slurm_clusters(self) -> list[Cluster]:
        """The clusters whose ranks their own Slurm starts (launcher = "slurm")."""
        return [c for c in self.clusters if c.batch.launcher == "slurm"]

    def login_host(self, cluster: Cluster) -> str:
        """The host a cluster's jobs are submitted from and its Slurm controller runs on."""
        return cluster.batch.login or f"{cluster.name}0"

    def cluster(self, name: str) -> Cluster:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(name)

    def route(self, src: str, dst: str) -> list[LinkModel] | None:
        """The links a packet crosses from a host of cluster src to a host of dst, as isthmus
        net routes it: src's uplink, the wide-area link and dst's uplink, then the port into
        the host (none when dst's LAN is not emulated); None when no wide-area link joins
        them (only zipper hosts do)."""
        dst_cluster = self.cluster(dst)
        # a real site's LAN (host patterns) is what the model has of it
        into = dst_cluster.lan if dst_cluster.lan_emulated or dst_cluster.hosts == 0 else None
        links: list[LinkModel | None] = [into]
        if src != dst:
            wan = self.wan.get((src, dst))
            if wan is None:
                return None
            links = [self.cluster(src).uplink, wan, dst_cluster.uplink, into]
        return [lk for lk in links if lk is not None]

    def forwarded_route(self, src: str, dst: str) -> list[LinkModel] | None:
        """The links a message crosses from a host of src to one of dst through the first
        zipper host joining them (docs/zipper.md): into the zipper host, then into the
        destination host; None when no zipper joins them."""
        for z in self.zippers:
            if src in z.clusters and dst in z.clusters:
                dst_cluster = self.cluster(dst)
                into = dst_cluster.lan if dst_cluster.lan_emulated else None
                return [lk for lk in (z.link, into) if lk is not None]
        return None

    def sites(self) -> list[list[str]]:
        """The clusters of each site, in file order: the groups the wide-area links join
        (one native MPI job each; sites reach each other only through zipper hosts)."""
        site_of: dict[str, int] = {}
        out: list[list[str]] = []
        names = [x.name for x in self.clusters]
        for c in names:
            if c in site_of:
                continue
            site_of[c] = len(out)
            members, todo = [c], [c]
            while todo:
                a = todo.pop()
                for b in names:
                    linked = (a, b) in self.wan or (b, a) in self.wan
                    if b not in site_of and linked:
                        site_of[b] = len(out)
                        members.append(b)
                        todo.append(b)
            out.append(sorted(members, key=names.index))
        return out

    def default_slots(self) -> list[Slot]:
        """Every world rank's slot without a placement file: the clusters' ranks in blocks
        in file order, or with layer.placement = "round-robin" one rank of each cluster in
        turn (a cluster that has no ranks left is skipped), each cluster's filling its
        hosts in order, ranks_per_host each; then the zipper hosts' ranks, counted in the
        first cluster their zipper joins."""
        if self.layer.placement == "block":
            names = [c.name for c in self.clusters for _ in range(c.ranks)]
        else:
            names = []
            for i in range(max((c.ranks for c in self.clusters), default=0)):
                names += [c.name for c in self.clusters if i < c.ranks]
        taken = dict.fromkeys((c.name for c in self.clusters), 0)
        out = []
        for name in names:
            out.append(Slot(f"{name}{taken[name] // self.cluster(name).ranks_per_host}", name))
            taken[name] += 1
        for z in self.zippers:
            out += [Slot(f"{z.name}{h}", z.clusters[0]) for h in range(z.hosts)
                    for _ in range(z.ranks_per_host)]  # fmt: skip
        return out

    def rank_slots(self) -> list[Slot]:
        """Every world rank's slot: the placement file's, else the default."""
        return list(self.placement) if self.placement is not None else self.default_slots()

    def rank_clusters(self) -> list[str]:
        """The cluster every world rank counts in (rank_slots)."""
        return [s.cluster for s in self.rank_slots()]

    def io_server_ranks(self, nranks: int) -> list[int]:
        """The world ranks of pio's I/O servers in a job of nranks (docs/pio.md): the first
        io.servers ranks of io.cluster, or else the job's last io.servers ranks."""
        if self.io is None:
            return []
        if self.io.cluster is not None and self.emulated:
            ranks = [r for r, c in enumerate(self.rank_clusters()) if c == self.io.cluster]
            return ranks[: self.io.servers]
        if self.io.servers >= nranks:
            raise UserError(
                f"{self.path}: io.servers: {self.io.servers} I/O servers in a job of {nranks} "
                "ranks leave no client: expected fewer servers than ranks"
            )
        return list(range(nranks - self.io.servers, nranks))

    def rank_blocks(self) -> list[tuple[str, int]]:
        """rank_clusters as runs of consecutive ranks: (cluster, count), in rank order."""
        runs: list[tuple[str, int]] = []
        for name in self.rank_clusters():
            if runs and runs[-1][0] == name:
                runs[-1] = (name, runs[-1][1] + 1)
            else:
                runs.append((name, 1))
        return runs
