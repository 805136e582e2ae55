"""The emulated network with real namespaces and the real router: life cycle, isolation,
link parameters, faults, and MPI runs whose bytes cross it. Every network has a unique
name and is removed even when a test fails."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import AS_NOBODY, ISTHMUS, MACHINE_ROOT, MPIS, PLATFORMS, TWO_CLUSTERS, Run
from isthmus.config import platform
from isthmus.emulate import net
from isthmus.emulate.plan import make_plan, netns_name
from isthmus.errors import UserError

# serial (make test runs it alone): it times the network
pytestmark = [
    pytest.mark.serial,
    pytest.mark.skipif(
        os.geteuid() != 0,
        reason="needs root or a user namespace: as a normal user, test_net_rootless.py runs this "
        "file inside one (or says why it cannot here)",
    ),
]
PROBE = Path(__file__).resolve().parents[2] / "build" / "bin" / "isthmus-probe"
PROBE_PORT = 5201  # isthmus-probe serve's default
_counter = iter(range(10**6))


def unique_name() -> str:
    return f"t{os.getpid() % 100000}-{next(_counter)}"


@contextmanager
def network(path: Path = TWO_CLUSTERS, *overrides: str) -> Iterator[str]:
    name = unique_name()
    try:
        net.up(platform.load(path, overrides), name)
        yield name
    finally:
        net.down(name)
        assert not [n for n in os.listdir("/var/run/netns") if n.startswith(f"ist-{name}-")]


@contextmanager
def probe_server(name: str, host: str, seconds: int = 30) -> Iterator[None]:
    proc = subprocess.Popen(
        [
            "ip",
            "netns",
            "exec",
            netns_name(name, host),
            str(PROBE),
            "serve",
            "--seconds",
            str(seconds),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "serving"
        yield
    finally:
        proc.terminate()
        proc.wait(10)


def probe(name: str, host: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        ["ip", "netns", "exec", netns_name(name, host), str(PROBE), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_up_status_down(isthmus: Run) -> None:
    with network() as name:
        st = net.load_state(name)
        assert st is not None
        assert [h["name"] for h in st.hosts] == ["ctl", "east0", "east1", "west0", "west1"]
        assert stat.S_IMODE(os.stat(st.control).st_mode) == 0o600
        done = isthmus("net", "status", "--name", name, "--json")
        assert done.returncode == 0, done.stderr
        stats = json.loads(done.stdout)
        assert stats["nice"] == (-10 if MACHINE_ROOT else 0)  # the wire is not starved
        links = {lk["name"]: lk for lk in stats["links"]}
        assert links["wan:east->west"]["latency_ns"] == 5_000_000
        assert links["wan:east->west"]["rate"] == pytest.approx(12.5e6)
        assert links["lan:west1"]["latency_ns"] == 25_000
        done = isthmus("net", "status", "--name", name)
        assert "wan:west->east" in done.stdout and "ist-" + name + "-east0" in done.stdout
        again = isthmus("net", "up", "-p", TWO_CLUSTERS, "--name", name)
        assert again.returncode == 2 and "already up" in again.stderr
    done = isthmus("net", "down", "--name", name)
    assert done.returncode == 0 and "nothing to remove" in done.stdout


def test_no_route_to_any_real_network() -> None:
    with network() as name:
        for host in ("ctl", "east0", "west1"):
            ns = netns_name(name, host)
            routes = subprocess.run(
                ["ip", "-n", ns, "-4", "route", "show"], capture_output=True, text=True, check=True
            ).stdout.splitlines()
            assert len(routes) == 1 and routes[0].startswith("198.18.0.0/15 dev ist0"), routes
            assert "default" not in " ".join(routes)
            # Route lookups only (no packet is sent): anything outside the range is unreachable.
            for outside in ("192.0.2.1", "10.0.0.1", "127.0.0.53"):
                look = subprocess.run(
                    ["ip", "-n", ns, "route", "get", outside], capture_output=True, text=True
                )
                if outside.startswith("127."):
                    assert "dev lo" in look.stdout  # the namespace's own loopback
                else:
                    assert look.returncode != 0 and "unreachable" in look.stderr
            links = subprocess.run(
                ["ip", "-n", ns, "-o", "link"], capture_output=True, text=True, check=True
            ).stdout
            assert sorted(line.split(": ")[1].split("@")[0] for line in links.splitlines()) == [
                "ist0",
                "lo",
            ]


def test_rtt_follows_latency_and_net_set(isthmus: Run) -> None:
    with network() as name, probe_server(name, "west0"):
        r = probe(name, "east0", "rtt", "198.18.2.1", "--udp", "--count", "40")
        # 2 x (5 ms WAN + 25 us LAN port); the zero-delay path adds tens of microseconds.
        assert 10.05e3 <= r["median_us"] <= 10.05e3 + 600, r
        done = isthmus("net", "set", "--name", name, "wan:*", "latency=1ms")
        assert done.returncode == 0, done.stderr
        r = probe(name, "east0", "rtt", "198.18.2.1", "--udp", "--count", "40")
        assert 2.05e3 <= r["median_us"] <= 2.05e3 + 600, r
        r = probe(name, "west1", "rtt", "198.18.2.1", "--count", "40")  # inside the cluster, TCP
        assert 50 <= r["median_us"] <= 1000, r


def test_net_set_rejects_bad_input(isthmus: Run) -> None:
    with network() as name:
        for args, message in (
            (["nosuch:*", "latency=1ms"], "no link matches"),
            (["wan:*", "latency=soon"], "expected a duration"),
            (["wan:*", "colour=red"], "unknown key"),
            (["wan:*"], "at least one key=value"),
        ):
            done = isthmus("net", "set", "--name", name, *args)
            assert done.returncode == 2 and message in done.stderr, done.stderr
            assert len(done.stderr.strip().splitlines()) == 1


def test_router_killed_then_down_cleans(isthmus: Run) -> None:
    with network() as name:
        st = net.load_state(name)
        assert st is not None
        os.kill(st.router_pid, signal.SIGKILL)
        time.sleep(0.3)
        done = isthmus("net", "status", "--name", name)
        assert done.returncode == 2 and "no network named" in done.stderr
        done = isthmus("net", "down", "--name", name)
        assert done.returncode == 0
        assert net.load_state(name) is None


def tcp_connect(name: str, host: str, address: str) -> subprocess.CompletedProcess[str]:
    """Open a TCP connection from host to address:PROBE_PORT (a probe server listens)."""
    code = f"import socket; socket.create_connection(('{address}', {PROBE_PORT}), timeout=1)"
    return subprocess.run(
        ["ip", "netns", "exec", netns_name(name, host), sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_disjoint_clusters_reach_only_the_zipper() -> None:
    with network(PLATFORMS / "zipper.toml") as name, probe_server(name, "gate0"):
        with probe_server(name, "right0"):
            r = probe(name, "left0", "rtt", "198.18.2.1", "--udp", "--count", "2")
            assert r["count"] == 0 and r["lost"] == 2  # left and right have no route
            # nor a TCP connection (the right host listens: only the network refuses)
            tcp = tcp_connect(name, "left0", "198.18.2.1")
            assert tcp.returncode != 0 and "Error" in tcp.stderr
            tcp = tcp_connect(name, "gate0", "198.18.2.1")
            assert tcp.returncode == 0, tcp.stderr  # the zipper host reaches it
        r = probe(name, "left0", "rtt", "198.18.3.1", "--udp", "--count", "10")
        assert r["count"] == 10
        r = probe(name, "right1", "rtt", "198.18.3.1", "--udp", "--count", "10")
        assert r["count"] == 10


def test_a_zipper_host_has_an_interface_per_side() -> None:
    """The zipper host is dual-homed: traffic from left to right and from right to left
    crosses different links (full duplex through the host), each side's own."""
    plan = make_plan(platform.load(PLATFORMS / "zipper.toml"))
    names = [lk.name for lk in plan.links]

    def route(a: str, b: str) -> list[str]:
        return [names[k] for k in plan.routes[(plan.host_index(a), plan.host_index(b))]]

    assert route("left0", "gate0") + route("gate0", "right0") == [
        "nic:left0", "zip:gate0<-left", "lan:right0"]  # fmt: skip
    assert route("right0", "gate0") + route("gate0", "left0") == [
        "nic:right0", "zip:gate0<-right", "lan:left0"]  # fmt: skip
    assert (plan.host_index("left0"), plan.host_index("right0")) not in plan.routes


def test_bad_network_requests(isthmus: Run, tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_text("[clusters.a]\nhosts = 300\n")
    with pytest.raises(UserError, match="exhausts the addresses"):
        make_plan(platform.load(big))
    with pytest.raises(UserError, match="a real site"):
        make_plan(platform.load(PLATFORMS / "site-patterns.toml"))
    done = isthmus("net", "up", "-p", TWO_CLUSTERS, "--name", "Bad_Name")
    assert done.returncode == 2 and "network name 'Bad_Name'" in done.stderr
    if not MACHINE_ROOT:
        return  # a user namespace's root cannot become another user
    done = subprocess.run(
        [
            *AS_NOBODY,
            str(ISTHMUS),
            "net",
            "up",
            "-p",
            str(TWO_CLUSTERS),
            "--name",
            unique_name(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "needs root" in done.stderr


def test_name_clash_with_existing_namespace(isthmus: Run) -> None:
    name = unique_name()
    subprocess.run(["ip", "netns", "add", f"ist-{name}-east0"], check=True)
    try:
        done = isthmus("net", "up", "-p", TWO_CLUSTERS, "--name", name)
        assert done.returncode == 2 and "already up" in done.stderr
    finally:
        subprocess.run(["ip", "netns", "del", f"ist-{name}-east0"], check=True)


@pytest.mark.parametrize("mpi", MPIS)
def test_mpi_traffic_crosses_the_router(
    isthmus: Run, apps: dict[tuple[str, str], Path], tmp_path: Path, mpi: str
) -> None:
    with network() as name:
        out = tmp_path / "p.json"
        done = isthmus(
            "run",
            "-p",
            TWO_CLUSTERS,
            "--net",
            name,
            "--profile",
            out,
            "--timeout",
            "120s",
            "--",
            apps[(mpi, "c")],
        )
        assert done.returncode == 0, done.stderr
        profile = json.loads(out.read_text())
        links = {lk["name"]: lk for lk in net.stats(name)["links"]}
        wan = links["wan:east->west"]["bytes"] + links["wan:west->east"]["bytes"]
        inter_payload = profile["traffic"]["p2p"]["inter"]["bytes"]
        # Every inter-cluster payload byte crossed the WAN links, plus headers and control.
        assert wan >= inter_payload
        assert wan < 3 * (inter_payload + profile["traffic"]["coll"]["inter"]["bytes"]) + 200_000
        for h in ("east0", "east1", "west0", "west1"):
            assert links[f"lan:{h}"]["bytes"] > 0


@pytest.mark.parametrize("mpi", MPIS)
def test_run_makes_and_removes_its_own_network(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str
) -> None:
    before = set(os.listdir("/var/run/netns"))
    done = isthmus("run", "-p", TWO_CLUSTERS, "--timeout", "120s", "--", apps[(mpi, "c")])
    assert done.returncode == 0, done.stderr
    assert set(os.listdir("/var/run/netns")) == before


def test_a_host_sends_at_its_ports_rate_whatever_the_destinations() -> None:
    """Two streams from one host, one inside its cluster and one across: together they get
    the host's port (nic:HOST, the LAN rate), not one port's rate each; alone, one stream
    gets it all. A root sending to many hosts is as slow as on a real NIC (and as the
    selector's model takes it)."""
    sets = ("clusters.east.lan.bandwidth=100Mbit/s", "clusters.west.lan.bandwidth=100Mbit/s",
            "wan.bandwidth=1Gbit/s", "wan.latency=0.5ms")  # fmt: skip
    with network(TWO_CLUSTERS, *sets) as name, probe_server(name, "east1"), \
            probe_server(name, "west0"):  # fmt: skip
        plan = make_plan(platform.load(TWO_CLUSTERS, sets))
        names = [lk.name for lk in plan.links]
        route = plan.routes[(plan.host_index("east0"), plan.host_index("west0"))]
        assert [names[k] for k in route] == ["nic:east0", "wan:east->west", "lan:west0"]
        alone = probe(name, "east0", "stream", "198.18.1.2", "--seconds", "2")["goodput_bps"]
        streams = [
            subprocess.Popen(["ip", "netns", "exec", netns_name(name, "east0"), str(PROBE),
                              "stream", dest, "--seconds", "2"], stdout=subprocess.PIPE, text=True)
            for dest in ("198.18.1.2", "198.18.2.1")
        ]  # fmt: skip
        both = sum(json.loads(p.communicate(timeout=60)[0])["goodput_bps"] for p in streams)
    assert 80e6 <= alone <= 105e6, alone
    assert 80e6 <= both <= 110e6, both  # without the port: up to twice that


def test_jitter_spreads_rtt_without_reordering(isthmus: Run) -> None:
    """Uniform jitter of 2 ms on one direction of a 5 ms link: RTTs spread over about
    [8, 12] ms. Packet order is kept, so a TCP stream sees no reordering."""
    with network() as name, probe_server(name, "west0"):
        done = isthmus("net", "set", "--name", name, "wan:east->west", "jitter=2ms")
        assert done.returncode == 0, done.stderr
        r = probe(name, "east0", "rtt", "198.18.2.1", "--udp", "--count", "150")
        assert r["min_us"] >= 7_900, r
        assert r["p90_us"] - r["min_us"] >= 1_500, r
        assert 9_000 <= r["median_us"] <= 11_500, r
        s = probe(name, "east0", "stream", "198.18.2.1", "--seconds", "2")
        assert s["goodput_bps"] > 1e6  # TCP copes: no reordering, only delay variation
        done = isthmus(
            "net",
            "set",
            "--name",
            name,
            "wan:east->west",
            "jitter_distribution=normal",
            "jitter=500us",
        )
        assert done.returncode == 0, done.stderr
        r = probe(name, "east0", "rtt", "198.18.2.1", "--udp", "--count", "100")
        assert 9_500 <= r["median_us"] <= 11_000, r


def test_link_mtu_sizes_the_packets_that_cross_it(isthmus: Run) -> None:
    """wan.mtu = 1500: hosts reach the other cluster through routes whose MTU is locked at
    1500 (their own cluster keeps the device's), and a TCP stream across the WAN arrives
    at the router in packets of at most 1500 bytes."""
    with network(TWO_CLUSTERS, "wan.mtu=1500") as name, probe_server(name, "west0"):
        ns = netns_name(name, "east0")

        def route(address: str) -> str:
            return subprocess.run(
                ["ip", "-n", ns, "route", "get", address],
                capture_output=True,
                text=True,
                check=True,
            ).stdout

        assert "mtu lock 1500" in route("198.18.2.1") and "mtu lock 1500" in route("198.18.2.2")
        assert "mtu" not in route("198.18.1.2")  # the same cluster: the device's MTU
        s = probe(name, "east0", "stream", "198.18.2.1", "--seconds", "1")
        assert s["goodput_bps"] > 1e6
        done = isthmus("net", "status", "--name", name, "--json")
        link = {lk["name"]: lk for lk in json.loads(done.stdout)["links"]}["wan:east->west"]
        assert link["packets"] > 100 and link["bytes"] / link["packets"] <= 1500, link
    done = isthmus("platform", "check", TWO_CLUSTERS, "--set", "wan.mtu=9KB")
    assert done.returncode == 0, done.stderr
    done = isthmus("platform", "check", TWO_CLUSTERS, "--set", "wan.mtu=1000")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "wan.mtu: expected 1280 to 65535 bytes" in done.stderr


def test_tcp_table_sets_the_hosts_tcp(isthmus: Run) -> None:
    """[tcp]: each emulated host's congestion control and restart after idle, as sysctls of
    its namespace; an algorithm the machine does not let namespaces choose is refused
    before anything is made."""

    def sysctl(ns: str, key: str) -> str:
        return subprocess.run(
            ["ip", "netns", "exec", ns, "sysctl", "-n", key],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    with network(
        TWO_CLUSTERS, "tcp.congestion_control=reno", "tcp.slow_start_after_idle=false"
    ) as name:
        for host in ("east0", "west1"):
            ns = netns_name(name, host)
            assert sysctl(ns, "net.ipv4.tcp_congestion_control") == "reno"
            assert sysctl(ns, "net.ipv4.tcp_slow_start_after_idle") == "0"
    name = unique_name()
    done = isthmus(
        "net", "up", "-p", TWO_CLUSTERS, "--name", name, "--set", "tcp.congestion_control=nosuch"
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "tcp.congestion_control = 'nosuch': this machine lets network namespaces" in done.stderr
    assert not [n for n in os.listdir("/var/run/netns") if n.startswith(f"ist-{name}-")]
    assert not net.state_dir(name).exists()
    done = isthmus("platform", "check", TWO_CLUSTERS, "--set", "tcp.congestion_control=2")
    assert done.returncode == 2
    assert "tcp.congestion_control: expected an algorithm's name such as reno" in done.stderr


def test_gilbert_elliott_losses_come_in_bursts(isthmus: Run) -> None:
    """Mean loss 5% with bursts of 8 on average: about the same number of losses as
    Bernoulli loss, but in long runs (Bernoulli at 5% almost never loses 5 in a row)."""
    with network() as name, probe_server(name, "west0"):
        isthmus("net", "set", "--name", name, "wan:*", "latency=100us")
        done = isthmus("net", "set", "--name", name, "wan:east->west", "loss=0.05", "loss_burst=8")
        assert done.returncode == 0, done.stderr
        r = probe(
            name, "east0", "rtt", "198.18.2.1", "--udp", "--count", "2000", "--timeout-ms", "20"
        )
        assert 0.015 <= r["lost"] / 2000 <= 0.12, r
        assert r["longest_loss_run"] >= 6, r


@pytest.mark.skipif(not MACHINE_ROOT, reason="changes user and /dev/net/tun: machine's root")
def test_rootless_run_through_a_user_namespace(apps: dict[tuple[str, str], Path]) -> None:
    """A normal user emulates through its own user namespace where /dev/net/tun allows it
    (Debian's default mode 0666). This machine keeps it 0600, so the test opens it up for
    its duration and restores it."""
    import tempfile

    tun = "/dev/net/tun"
    mode = stat.S_IMODE(os.stat(tun).st_mode)
    user = AS_NOBODY
    before = set(os.listdir("/var/run/netns"))
    with tempfile.TemporaryDirectory(prefix="isthmus-rootless-") as d:
        os.chmod(d, 0o777)
        denied = subprocess.run(
            [*user, str(ISTHMUS), "run", "-p", str(TWO_CLUSTERS), "--", "true"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=d,
        )
        if mode & 0o006 != 0o006:
            assert denied.returncode == 2 and "/dev/net/tun" in denied.stderr, denied.stderr
        try:
            os.chmod(tun, 0o666)
            for mpi in MPIS:
                app = Path(d) / f"pattern-{mpi}"
                app.write_bytes(apps[(mpi, "c")].read_bytes())
                app.chmod(0o755)
                out = Path(d) / f"{mpi}.json"
                done = subprocess.run(
                    [
                        *user,
                        "env",
                        f"HOME={d}",
                        str(ISTHMUS),
                        "run",
                        "-p",
                        str(TWO_CLUSTERS),
                        "--profile",
                        str(out),
                        "--timeout",
                        "120s",
                        "--",
                        str(app),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=180,
                    cwd=d,
                )
                assert done.returncode == 0, done.stderr
                profile = json.loads(out.read_text())
                # 10 ring steps across a 10 ms RTT: far longer than on the machine's own network
                assert max(r["app_seconds"] for r in profile["ranks"]) > 0.1
        finally:
            os.chmod(tun, mode)
    # The user's namespaces live in its own /run: none may appear in the machine's.
    assert not set(os.listdir("/var/run/netns")) - before
