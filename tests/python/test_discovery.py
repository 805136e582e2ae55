"""The layer finds the clusters by measuring (layer.clusters = "auto", issue 24): on the
emulated platforms, in block and round-robin placement, the clusters it reports are the
platform's, and the P-LogP parameters it measures for the collectives are near the
platform's links. The full matrix and the time MPI_Init takes are in results/adaptive/."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import PLATFORMS, TWO_CLUSTERS, profile_run
from isthmus.profile.discovery import matches_platform, same_partition

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
