"""Slurm per emulated cluster (docs/slurm.md): Debian's slurm-wlm, one controller and one
node daemon per host, each in its host's network namespace under its own host name.

For every cluster with `launcher = "slurm"`, `isthmus net up` writes a slurm.conf and a
munge key under the network's state directory and starts, all as root:
- munged with that key (the site's own: a credential of one cluster is worthless at the
  other), its socket on the shared file system, which every namespace reaches;
- slurmctld on the cluster's login host (its first host, or the zipper host named by
  clusters.NAME.slurm.login; two clusters sharing one get two ports);
- slurmd on every host of the cluster, on the standard port of the host's address.
Each daemon runs under `unshare --uts --mount` with the host's name, so that it is a node
of its own. A node daemon's mount namespace mounts a sysfs of its network namespace on
/sys (UCX finds its devices there, as under `ip netns exec`), keeps the machine's
cgroups on /sys/fs/cgroup (slurmd 22.05 reads them even with proctrack/linuxproc and
task/none, the plugins used here: nothing is confined), and gives the node a /tmp of its
own for PMIx's per-job directories (spmix_appdir_UID_JOB.STEP, the same name on every
node). Ranks started by slurmstepd inherit all of it.

`down` stops the daemons and whatever they started (the ranks of a job still running),
also after the `isthmus run` that made the network was killed (emulate/keeper.py).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from isthmus.config.platform import Platform
from isthmus.emulate import keeper
from isthmus.emulate.plan import NetworkPlan, netns_name
from isthmus.errors import UserError

SLURMCTLD_PORT = 6817  # Slurm's standard ports
SLURMD_PORT = 6818
READY_SECONDS = 30.0  # every node idle within this, or net up fails naming the first
STOP_GRACE_SECONDS = 3.0
# what an emulated Slurm cluster needs of slurm-wlm and munge
PROGRAMS = ("munged", "slurmctld", "slurmd", "salloc", "srun", "squeue", "scancel", "sinfo")
NETNS_DIR = Path("/var/run/netns")


@dataclass(frozen=True)
class SlurmCluster:
    """One emulated cluster's Slurm: where its controller and nodes are."""

    name: str
    login: str  # the host slurmctld runs on, where jobs are submitted
    login_address: str
    port: int  # slurmctld's
    nodes: tuple[tuple[str, str], ...]  # (host, address) of every slurmd
    cpus: int  # of each node: the cluster's ranks_per_host
    partition: str


def slurm_clusters(platform: Platform, p: NetworkPlan) -> list[SlurmCluster]:
    """The Slurm of every cluster with launcher = "slurm", in file order."""
    address = {h.name: h.address for h in p.hosts}
    out: list[SlurmCluster] = []
    for c in platform.slurm_clusters():
        login = platform.login_host(c)
        shared = sum(1 for s in out if s.login == login)  # controllers already on that host
        out.append(
            SlurmCluster(
                c.name,
                login,
                address[login],
                SLURMCTLD_PORT + 10 * shared,
                tuple((f"{c.name}{i}", address[f"{c.name}{i}"]) for i in range(c.hosts)),
                c.ranks_per_host,
                c.batch.partition,
            )
        )
    return out


def cluster_dir(state: Path, cluster: str) -> Path:
    """Where a cluster's Slurm keeps its configuration, state, spool and logs."""
    return state / "slurm" / cluster


def conf_path(state: Path, cluster: str) -> Path:
    """The cluster's slurm.conf: what SLURM_CONF names for its commands."""
    return cluster_dir(state, cluster) / "slurm.conf"


def slurm_conf(s: SlurmCluster, d: Path) -> str:
    """The cluster's slurm.conf: no accounting, no cgroup plugin, jobs gone soon after."""
    lines = [
        f"ClusterName={s.name.lower()}",
        f"SlurmctldHost={s.login}({s.login_address})",
        f"SlurmctldPort={s.port}",
        f"SlurmdPort={SLURMD_PORT}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={d}/munge/socket",
        f"StateSaveLocation={d}/state",
        f"SlurmdSpoolDir={d}/spool/%n",
        f"SlurmctldPidFile={d}/slurmctld.pid",
        f"SlurmdPidFile={d}/spool/%n/slurmd.pid",
        f"SlurmctldLogFile={d}/log/slurmctld.log",
        f"SlurmdLogFile={d}/log/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SchedulerType=sched/builtin",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SlurmdParameters=config_overrides",  # a node has the CPUs said here, not the host's
        "ReturnToService=2",
        "MpiDefault=none",
        "InactiveLimit=0",
        "KillWait=2",
        "MinJobAge=2",  # a finished job leaves squeue within seconds
        "SlurmctldTimeout=30",
        "SlurmdTimeout=30",
    ]
    lines += [
        f"NodeName={host} NodeAddr={addr} CPUs={s.cpus} State=UNKNOWN" for host, addr in s.nodes
    ]
    nodes = ",".join(host for host, _ in s.nodes)
    lines.append(f"PartitionName={s.partition} Nodes={nodes} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def _in_host(net: str, host: str, setup: list[str], argv: list[str]) -> list[str]:
    """argv as a daemon of emulated host `host`: its network namespace, its host name, a
    mount namespace of its own prepared by the shell commands `setup`."""
    script = " && ".join([*setup, f"hostname {shlex.quote(host)}", f"exec {shlex.join(argv)}"])
    return [
        "nsenter", f"--net={NETNS_DIR / netns_name(net, host)}",
        "unshare", "--uts", "--mount", "--propagation", "private", "sh", "-c", script,
    ]  # fmt: skip


def _node_setup(d: Path, host: str) -> list[str]:
    """A node's mount namespace: its own /tmp for PMIx, the namespace's sysfs, the
    machine's cgroups (see the module's docstring)."""
    own_tmp, hold = d / "tmp" / host, d / "hold" / host
    for p in (own_tmp, hold):
        p.mkdir(parents=True, exist_ok=True)
    q = shlex.quote
    return [
        f"mount --bind {q(str(own_tmp))} {q(str(d / 'node-tmp'))}",
        f"mount --rbind /sys/fs/cgroup {q(str(hold))}",
        "mount -t sysfs sysfs /sys",
        f"mount --move {q(str(hold))} /sys/fs/cgroup",
    ]


def _spawn(cmd: list[str], log: Path) -> int:
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    return proc.pid


def _record(state: Path, pids: list[int]) -> None:
    (state / "slurm" / "pids.json").write_text(json.dumps(pids))


def start(
    platform: Platform, p: NetworkPlan, net: str, state: Path, owner_pid: int = 0
) -> list[SlurmCluster]:
    """Start every Slurm cluster of the platform and wait until each node is idle. The
    pids go to state/slurm/pids.json as they start (stop() reads them). With owner_pid
    (the `isthmus run` that made the network), a keeper stops them if that run dies."""
    clusters = slurm_clusters(platform, p)
    if not clusters:
        return []
    if os.geteuid() != 0:
        raise UserError('launcher = "slurm": Slurm\'s daemons run as root: run isthmus as root')
    missing = [c for c in PROGRAMS if shutil.which(c) is None]
    if missing:
        raise UserError(
            f'launcher = "slurm": {", ".join(missing)} not found: expected Debian\'s slurmctld, '
            "slurmd, slurm-client and munge (scripts/install-deps.sh installs them)"
        )
    (state / "slurm").mkdir(parents=True, exist_ok=True)
    pids: list[int] = []
    if owner_pid:  # the run that made the network may be killed outright
        stop_all = [sys.executable, "-m", "isthmus.emulate.slurm", "stop", net, str(state)]
        pids.append(keeper.spawn(owner_pid, [stop_all], state / "slurm" / "keeper.log"))
    for s in clusters:
        _start_cluster(s, net, state, pids)
    for s in clusters:
        _wait_for(
            functools.partial(_all_idle, net, state, s),
            READY_SECONDS,
            f"the Slurm of cluster {s.name} (nodes {', '.join(h for h, _ in s.nodes)})",
            cluster_dir(state, s.name) / "log" / "slurmctld.log",
        )
    return clusters


def _start_cluster(s: SlurmCluster, net: str, state: Path, pids: list[int]) -> None:
    """Write one cluster's files and start its munged, slurmctld and slurmds (their pids
    appended to pids and recorded as each starts)."""
    d = cluster_dir(state, s.name)
    for sub in ("munge", "state", "log", "node-tmp", *(f"spool/{h}" for h, _ in s.nodes)):
        (d / sub).mkdir(parents=True, exist_ok=True)
    m = d / "munge"
    m.chmod(0o700)
    key = m / "key"
    key.write_bytes(secrets.token_bytes(1024))  # the site's own key
    key.chmod(0o400)
    conf = conf_path(state, s.name)
    conf.write_text(slurm_conf(s, d))
    (d / "mpi.conf").write_text(f"PMIxCliTmpDirBase={d / 'node-tmp'}\n")
    munged = ["munged", "--foreground", "--force", f"--socket={m / 'socket'}",
              f"--key-file={key}", f"--log-file={m / 'log'}", f"--pid-file={m / 'pid'}",
              f"--seed-file={m / 'seed'}"]  # fmt: skip
    pids.append(_spawn(munged, d / "log" / "munged.out"))
    _record(state, pids)
    _wait_for((m / "socket").exists, 10.0, f"munged of cluster {s.name}", m / "log")
    ctld = ["slurmctld", "-D", "-f", str(conf)]
    pids.append(_spawn(_in_host(net, s.login, [], ctld), d / "log" / "slurmctld.out"))
    _record(state, pids)
    for host, _ in s.nodes:
        slurmd = ["slurmd", "-D", "-f", str(conf)]
        pids.append(_spawn(_in_host(net, host, _node_setup(d, host), slurmd),
                           d / "log" / f"slurmd-{host}.out"))  # fmt: skip
        _record(state, pids)


def _wait_for(ready: Callable[[], bool], seconds: float, what: str, log: Path) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if ready():
            return
        time.sleep(0.2)
    tail = ""
    with contextlib.suppress(OSError):
        errors = [ln for ln in log.read_text().splitlines() if "error" in ln.lower()]
        tail = f": {errors[-1].strip()}" if errors else ""
    raise UserError(f"{what} did not start within {seconds:g}s (log {log}){tail}")


def command(net: str, state: Path, cluster: str, login: str, argv: list[str]) -> list[str]:
    """A Slurm command (sinfo, salloc, srun, squeue, scancel) of a cluster, as run on its
    login host."""
    return [
        "nsenter", f"--net={NETNS_DIR / netns_name(net, login)}",
        "env", f"SLURM_CONF={conf_path(state, cluster)}", *argv,
    ]  # fmt: skip


def _all_idle(net: str, state: Path, s: SlurmCluster) -> bool:
    out = subprocess.run(
        command(net, state, s.name, s.login, ["sinfo", "--noheader", "--Node", "--format=%N %T"]),
        capture_output=True,
        text=True,
    )
    states = dict(line.split()[:2] for line in out.stdout.splitlines() if len(line.split()) >= 2)
    return out.returncode == 0 and all(states.get(h) == "idle" for h, _ in s.nodes)


def stop(state: Path, net: str) -> list[str]:
    """Stop the Slurm daemons of a network and whatever runs in its hosts' namespaces
    (slurmstepd and the tasks of a job still running). Idempotent; returns what it
    stopped."""
    record = state / "slurm" / "pids.json"
    try:
        pids = [int(p) for p in json.loads(record.read_text())]
    except (OSError, ValueError, TypeError):
        pids = []
    pids += namespace_pids(net)
    alive = [p for p in dict.fromkeys(pids) if _signal(p, signal.SIGTERM)]
    end = time.monotonic() + STOP_GRACE_SECONDS
    while time.monotonic() < end and any(keeper.alive(p) for p in alive):
        time.sleep(0.05)
    for p in alive:
        _signal(p, signal.SIGKILL)
    for p in namespace_pids(net):  # what slurmstepd started while it was stopping
        _signal(p, signal.SIGKILL)
    return [f"Slurm daemons and their jobs ({len(alive)} processes)"] if alive else []


def namespace_pids(net: str) -> list[int]:
    """Every process in one of the network's namespaces."""
    out: list[int] = []
    for ns in sorted(NETNS_DIR.glob(netns_name(net, "*"))):
        done = subprocess.run(["ip", "netns", "pids", ns.name], capture_output=True, text=True)
        out += [int(p) for p in done.stdout.split() if p.isdigit()]
    return out


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


if __name__ == "__main__":  # the keeper's command: python -m isthmus.emulate.slurm stop NET STATE
    if sys.argv[1:2] == ["stop"]:
        stop(Path(sys.argv[3]), sys.argv[2])
