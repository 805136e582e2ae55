"""The emulated network: a namespace per emulated host, joined by isthmus-router.

`plan` turns a platform into hosts (namespace, address), links (one per direction, with
their model) and routes (the links a packet crosses from one host to another); `up`
creates the namespaces, starts the router with that plan and configures the addresses;
`down` removes everything, also after a crash, and is idempotent. docs/net.md describes
the addressing and the paths.

Addresses come from 198.18.0.0/15, the range RFC 2544 reserves for benchmarking network
devices, and exist only inside the namespaces made here: no namespace has a route to
anything else, and there is no NAT.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.config.platform import MTU_RANGE, Platform, TcpSettings, parse_link
from isthmus.emulate import dilation as scale
from isthmus.emulate import signals, slurm
from isthmus.emulate.plan import (
    DEFAULT_MTU,
    DEFAULT_NAME,
    DEVICE,
    DILATED_MTU,
    PREFIX_LEN,
    ROUTER_KEYS,
    NetworkPlan,
    check_name,
    link_settings,
    make_plan,
    netns_name,
    router_config,
)
from isthmus.errors import UserError
from isthmus.records import atomic

STATE_ROOT = Path(os.environ.get("ISTHMUS_STATE_DIR", "/run/isthmus"))


NETNS_DIR = Path("/var/run/netns")


@dataclass
class NetworkState:
    name: str
    platform: str
    overrides: list[str]
    mtu: int
    router_pid: int
    control: str
    hosts: list[dict[str, Any]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    owner_pid: int = 0  # the `isthmus run` that made it for itself, 0 for `net up`
    dilation: float = 1.0  # the scale model's K (docs/dilation.md)
    cgroups: str = ""  # the hosts' CPU cgroups' directory when K > 1


def state_dir(name: str) -> Path:
    return STATE_ROOT / name


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise UserError(f"ip {' '.join(args)}: {done.stderr.strip() or 'failed'}")


def _sysctl(ns: str, settings: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", ns, "sysctl", "-q", "-w", *settings], capture_output=True, text=True
    )


def _quiet_ipv6(ns: str) -> None:
    """IPv6 off in our namespaces: the router carries IPv4 only, and the kernel's IPv6
    router solicitations would only show up as unroutable packets."""
    _sysctl(ns, ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"])


TCP_ALLOWED = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")


def tcp_sysctls(tcp: TcpSettings) -> list[str]:
    """The platform's [tcp] table as per-namespace sysctls. A namespace other than the
    machine's may only choose a congestion control the machine allows to everyone: checked
    here, before anything is made."""
    out = []
    if tcp.congestion_control is not None:
        allowed = TCP_ALLOWED.read_text().split() if TCP_ALLOWED.exists() else []
        if tcp.congestion_control not in allowed:
            raise UserError(
                f"tcp.congestion_control = {tcp.congestion_control!r}: this machine lets network "
                f"namespaces choose {' or '.join(allowed) or 'none'} "
                f"(net.ipv4.tcp_allowed_congestion_control)"
            )
        out.append(f"net.ipv4.tcp_congestion_control={tcp.congestion_control}")
    if tcp.slow_start_after_idle is not None:
        out.append(f"net.ipv4.tcp_slow_start_after_idle={int(tcp.slow_start_after_idle)}")
    return out


def _set_sysctls(ns: str, settings: list[str]) -> None:
    if not settings:
        return
    done = _sysctl(ns, settings)
    if done.returncode != 0:
        raise UserError(f"{ns}: sysctl {' '.join(settings)}: {done.stderr.strip() or 'failed'}")


def existing_namespaces(name: str) -> list[str]:
    """The namespaces of network NAME; with "", every namespace isthmus made."""
    prefix = f"ist-{name}-" if name else "ist-"
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(prefix))


def require_privileges() -> None:
    if os.geteuid() != 0:
        raise UserError(
            "the emulated network needs root (namespaces, TUN devices): run as root; "
            "docs/net.md says what rootless operation needs"
        )
    if not os.access("/dev/net/tun", os.R_OK | os.W_OK):
        raise UserError("/dev/net/tun is missing or not accessible: TUN support is needed")


def load_state(name: str) -> NetworkState | None:
    try:
        data = json.loads((state_dir(name) / "state.json").read_text())
        return NetworkState(**data)
    except (OSError, ValueError, TypeError):
        return None


def is_up(name: str) -> bool:
    st = load_state(name)
    return st is not None and _router_alive(st)


def _router_alive(st: NetworkState) -> bool:
    try:
        cmdline = Path(f"/proc/{st.router_pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"isthmus-router" in cmdline


def up(
    platform: Platform,
    name: str = DEFAULT_NAME,
    overrides: list[str] | None = None,
    mtu: int | None = None,
    spin_ns: int = 200_000,
    owner_pid: int = 0,
    dilation: float | None = None,
    router_sched: str = "nice",
) -> NetworkState:
    """Create the namespaces, start the router, configure the addresses; with dilation
    K > 1 (default: the platform's), also the hosts' CPU cgroups. The devices' MTU:
    `mtu`, else DEFAULT_MTU, or DILATED_MTU when K > 1."""
    check_name(name)
    require_privileges()
    p = make_plan(platform)
    k = scale.resolve(platform).factor if dilation is None else dilation
    if mtu is None:
        mtu = DILATED_MTU if k > 1 else DEFAULT_MTU
    if not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]:
        raise UserError(f"--mtu {mtu}: expected {MTU_RANGE[0]} to {MTU_RANGE[1]}")
    if k > 1:
        scale.require_writable()
    sysctls = tcp_sysctls(platform.tcp)
    clash = existing_namespaces(name)
    if clash or state_dir(name).exists():
        raise UserError(
            f"a network named {name!r} is already up ({len(clash)} namespaces): "
            f"use it, or 'isthmus net down --name {name}' first"
        )
    d = state_dir(name)
    try:
        d.mkdir(parents=True, mode=0o700)
        for h in p.hosts:
            _ip("netns", "add", netns_name(name, h.name))
            _ip("-n", netns_name(name, h.name), "link", "set", "lo", "up")
            _quiet_ipv6(netns_name(name, h.name))
            _set_sysctls(netns_name(name, h.name), sysctls)
        control = d / "router.sock"
        conf = d / "router.conf"
        conf.write_text(router_config(p, name, control, spin_ns, k, router_sched))
        cgroups = str(scale.make_cgroups(platform, name, k)) if k > 1 else ""
        pid = _start_router(conf, d / "router.log", dies_with_parent=owner_pid != 0)
        for h in p.hosts:
            ns = netns_name(name, h.name)
            _ip("-n", ns, "addr", "add", f"{h.address}/{PREFIX_LEN}", "dev", DEVICE)
            _ip("-n", ns, "link", "set", DEVICE, "mtu", str(mtu), "up")
        _path_mtu_routes(p, name, mtu)
        slurm.start(platform, p, name, d, owner_pid)
        st = NetworkState(
            name,
            str(platform.path),
            list(overrides or []),
            mtu,
            pid,
            str(control),
            [asdict(h) | {"netns": netns_name(name, h.name)} for h in p.hosts],
            [lk.name for lk in p.links],
            owner_pid,
            k,
            cgroups,
        )
        atomic.write_text(d / "state.json", json.dumps(asdict(st), indent=1))
        return st
    except BaseException:
        with signals.deferred():
            down(name)
        raise


def path_mtus(p: NetworkPlan, device_mtu: int) -> dict[tuple[int, int], int]:
    """(src host, dst host) -> the smallest link MTU on the route, where it is below the
    devices' own."""
    out = {}
    for pair, hops in p.routes.items():
        mtus = [m for k in hops if (m := p.links[k].model.mtu) is not None]
        if mtus and min(mtus) < device_mtu:
            out[pair] = min(mtus)
    return out


def _path_mtu_routes(p: NetworkPlan, name: str, device_mtu: int) -> None:
    """A host route with a locked MTU to every host whose route crosses a link of smaller
    MTU, so that the sending kernel cuts its packets (and TCP its segments) to that size,
    as a real network of such links would make it (the router carries what it gets)."""
    by_src: dict[int, list[str]] = {}
    for (i, j), m in sorted(path_mtus(p, device_mtu).items()):
        by_src.setdefault(i, []).append(
            f"route add {p.hosts[j].address}/32 dev {DEVICE} mtu lock {m}\n"
        )
    for i, cmds in by_src.items():
        ns = netns_name(name, p.hosts[i].name)
        done = subprocess.run(
            ["ip", "-n", ns, "-batch", "-"], input="".join(cmds), capture_output=True, text=True
        )
        if done.returncode != 0:
            raise UserError(f"ip -n {ns} route add ... mtu lock: {done.stderr.strip() or 'failed'}")


def _die_with_parent() -> None:
    """In the router of a run's own network: SIGTERM when the run's isthmus dies."""
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _start_router(conf: Path, log: Path, dies_with_parent: bool = False) -> int:
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [str(paths.router()), str(conf)],
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,
            preexec_fn=_die_with_parent if dies_with_parent else None,
        )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 10.0)
    line = proc.stdout.readline().decode().strip() if ready else ""
    if line != "ready":
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        reason = log.read_text().strip().splitlines()
        raise UserError(f"the router did not start: {reason[-1] if reason else 'no message'}")
    proc.stdout.close()
    return proc.pid


def down(name: str = DEFAULT_NAME) -> list[str]:
    """Remove the network: router, namespaces, state. Idempotent; returns what it removed."""
    check_name(name)
    removed = []
    if (state_dir(name) / "slurm").exists():
        removed += slurm.stop(state_dir(name), name)
    st = load_state(name)
    if st is not None and _router_alive(st):
        with contextlib.suppress(ProcessLookupError):
            os.kill(st.router_pid, signal.SIGTERM)
        for _ in range(500):  # it ends within milliseconds: every run waits for it here
            if not _router_alive(st):
                break
            time.sleep(0.005)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(st.router_pid, signal.SIGKILL)
        removed.append(f"router (pid {st.router_pid})")
    for ns in existing_namespaces(name):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        removed.append(ns)
    removed += scale.remove_cgroups(name)
    d = state_dir(name)
    if d.exists():
        shutil.rmtree(d, ignore_errors=True)
        removed.append(str(d))
    return removed


def control(name: str, command: str, timeout: float = 5.0) -> str:
    """Send one command to the router's control socket; return its reply."""
    st = load_state(name)
    if st is None or not _router_alive(st):
        raise UserError(
            f"no network named {name!r} is up (isthmus net up -p PLATFORM --name {name})"
        )
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(st.control)
            s.sendall(command.encode() + b"\n")
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except OSError as e:
            raise UserError(f"the router of {name!r} does not answer: {e}") from None
    return b"".join(chunks).decode()


def stats(name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(control(name, "stats"))
    return result


def set_link(name: str, link: str, settings: dict[str, str]) -> list[str]:
    """Change links whose name matches `link` (a name, or a glob such as 'wan:*');
    settings use the platform's keys and units (latency=2ms, bandwidth=10Mbit/s ...)."""
    st = load_state(name)
    if st is None:
        raise UserError(f"no network named {name!r} is up")
    names = [n for n in st.links if fnmatch.fnmatchcase(n, link)]
    if not names:
        raise UserError(f"no link matches {link!r} (links: {', '.join(st.links)})")
    unknown = [k for k in settings if k not in ROUTER_KEYS]
    if unknown:
        raise UserError(
            f"net set: unknown key {unknown[0]!r} (expected one of: {', '.join(ROUTER_KEYS)})"
        )
    values: dict[str, Any] = dict(settings)
    for key in ("loss", "loss_burst"):  # numbers on the command line arrive as text
        if key in values:
            try:
                values[key] = float(values[key])
            except ValueError:
                raise UserError(f"net set {key}={values[key]}: expected a number") from None
    model = parse_link(values, "net set")
    router_settings = link_settings(model, settings.keys())
    changes = [(n, router_settings) for n in names]
    if "bandwidth" in settings:  # a host's port has one rate, in and out
        ports = [n.partition(":")[2] for n in names if n.split(":")[0] in ("lan", "zip")]
        nic_rate = link_settings(model, ["bandwidth"])
        changes += [(f"nic:{h}", nic_rate) for h in ports if f"nic:{h}" in st.links]
    for n, router in changes:
        reply = control(name, f"set {n} {router}").strip()
        if reply != "ok":
            raise UserError(f"link {n}: {reply}")
    return names
