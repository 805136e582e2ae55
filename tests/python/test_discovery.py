"""The layer finds the clusters by measuring (layer.clusters = "auto", issue 24): on the
emulated platforms, in block and round-robin placement, the clusters it reports are the
platform's, and the P-LogP parameters it measures for the collectives are near the
platform's links. The full matrix and the time MPI_Init takes are in results/adaptive/."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import PLATFORMS, ROOT, TWO_CLUSTERS, profile_run
from isthmus.profile.discovery import discovered_clusters, matches_platform, same_partition

# serial (make test runs it alone): discovery groups ranks by the round trips it measures
pytestmark = pytest.mark.serial

AUTO = ("--set", "layer.clusters=auto", "--set", "layer.collectives=isthmus")


def test_same_partition_ignores_names() -> None:
    assert same_partition([0, 0, 1, 1], ["east", "east", "west", "west"])
    assert same_partition([1, 0, 1, 0], ["a", "b", "a", "b"])
    assert not same_partition([0, 0, 0, 1], ["a", "a", "b", "b"])
    assert not same_partition([0, 1, 0, 1], ["a", "a", "b", "b"])
    assert not same_partition([0, 1], ["a", "a"])  # two found where the platform has one
    assert not same_partition([0], ["a", "a"])


@pytest.mark.parametrize(
    ("mpi", "platform", "placement"),
    [
        ("mpich", TWO_CLUSTERS, "block"),  # round-robin, both MPIs: the experiment's --quick
        ("mpich", PLATFORMS / "three-sites-slow-link.toml", "round-robin"),
    ],
)
def test_discovery_finds_the_platforms_clusters(
    apps: dict[tuple[str, str], Path], tmp_path: Path, mpi: str, platform: Path, placement: str
) -> None:
    prof = profile_run(
        apps[(mpi, "c")], tmp_path / "p.json", platform, *AUTO,
        "--set", f"layer.placement={placement}",
    )  # fmt: skip
    assert prof["clusters_from"] == "measured"
    assert matches_platform(prof), (prof["discovery"], prof["run"]["platform"])
    wan = prof["plogp"]["wan"]
    assert prof["plogp"]["source"] == "measured"
    # the configured one-way latency across the WAN: 5 ms (two-clusters), 2 ms (a to b)
    configured = 5000 if platform == TWO_CLUSTERS else 2000
    assert configured <= wan["L_us"] < 1.5 * configured + 500, wan
    assert all(g > 0 for _, _, _, g in wan["points"])


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_a_real_site_needs_no_cluster_section(
    apps: dict[tuple[str, str], Path], tmp_path: Path, mpi: str
) -> None:
    """examples/platforms/site-auto.toml has no [clusters] at all: on a real site the layer
    finds them. Here the real site is this machine: 4 ranks on one host, one cluster,
    found by measuring (no emulation, no namespaces), and the collectives' model measured."""
    prof = profile_run(
        apps[(mpi, "c")], tmp_path / "p.json", PLATFORMS / "site-auto.toml", "-n", "4",
        "--mpi", mpi,
    )  # fmt: skip
    assert discovered_clusters(prof) == [0, 0, 0, 0]
    assert prof["discovery"]["hosts"] == 1
    assert prof["plogp"]["source"] == "measured"


SIM = ROOT / "build" / "bin" / "isthmus-discover-sim"


def simulate(*args: str) -> list[dict[str, Any]]:
    done = subprocess.run([str(SIM), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_simulated_method_finds_256_hosts_in_a_fraction_of_a_second() -> None:
    """isthmus-discover-sim runs discover.c itself on a modelled platform: 256 hosts in 4
    clusters with das-4x2's links are found exactly, in one round, and in a modelled time
    that grows with log H, not H (O(H log H) pairs measured at once)."""
    das = ("--clusters", "4", "--lan-rtt", "80", "--wan-rtt", "20080", "--runs", "3")
    small, large = simulate("--hosts", "8", *das), simulate("--hosts", "256", *das)
    assert all(r["exact"] and r["found"] == 4 and r["careful"] == 0 for r in small + large)
    assert max(r["modelled_ms"] for r in large) < 3 * min(r["modelled_ms"] for r in small)
    assert max(r["modelled_ms"] for r in large) < 1500


def test_at_the_edge_only_a_spanning_set_goes_one_pair_at_a_time() -> None:
    """At das-4x2's 5x edge with noise that hides the gap in the sample, H - 1 pairs (a
    spanning forest of the short ones) are measured carefully, not every short pair, and
    the clusters are still exact."""
    edge = ("--clusters", "4", "--placement", "round-robin", "--lan-rtt", "80", "--wan-rtt",
            "280", "--noise", "150", "--careful-noise", "10", "--runs", "5")  # fmt: skip
    for hosts in (8, 64):
        runs = simulate("--hosts", str(hosts), *edge)
        assert all(r["exact"] for r in runs), runs
        assert all(r["careful"] <= hosts + 8 for r in runs), runs  # H - 1, and verifying pairs


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--hosts", "3", "--clusters", "5"], "1 <= C <= H"),
        (["--hosts", "lots"], "--hosts lots: expected a number from 2 to 65536"),
        (["--placement", "diagonal"], "--placement diagonal: expected block or round-robin"),
        (["--colour", "red"], "option --colour"),
    ],
)
def test_the_simulator_says_what_is_wrong_in_one_line(args: list[str], message: str) -> None:
    done = subprocess.run([str(SIM), *args], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
