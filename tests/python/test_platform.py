"""Platform files: the examples load; every kind of bad file gets a one-line error that
names the file and the key; --set overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import PLATFORMS, Run
from isthmus.config import platform
from isthmus.errors import UserError

EXAMPLES = sorted(PLATFORMS.glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples_load(path: Path) -> None:
    p = platform.load(path)
    assert p.clusters or p.layer.clusters == "auto"  # site-auto: the layer finds them


def test_two_clusters_shape() -> None:
    p = platform.load(PLATFORMS / "two-clusters.toml")
    assert p.rank_blocks() == [("east", 2), ("west", 2)]
    assert p.wan[("east", "west")].latency == pytest.approx(0.005)
    assert p.wan[("west", "east")].bandwidth == pytest.approx(12.5e6)
    assert p.emulated


def test_required_examples() -> None:
    das = platform.load(PLATFORMS / "das-4x2.toml")
    assert len(das.clusters) == 4 and das.total_ranks == 8
    assert {m.latency for m in das.wan.values()} == {0.01}
    assert {m.bandwidth for m in das.wan.values()} == {1e6}
    matsuda = platform.load(PLATFORMS / "matsuda-2x16.toml")
    assert [c.hosts for c in matsuda.clusters] == [16, 16]
    zipper = platform.load(PLATFORMS / "zipper.toml")
    assert zipper.wan == {} and zipper.zippers[0].clusters == ("left", "right")
    site = platform.load(PLATFORMS / "site-patterns.toml")
    assert not site.emulated and site.clusters[0].host_patterns == ("alpha-*", "a[0-9]*")


def test_set_overrides_every_wan_link() -> None:
    p = platform.load(PLATFORMS / "das-4x2.toml", ["wan.latency=2ms", "clusters.ams.hosts=3"])
    assert {m.latency for m in p.wan.values()} == {0.002}
    assert p.cluster("ams").ranks == 3


def test_explicit_link_overrides_default(tmp_path: Path) -> None:
    f = tmp_path / "p.toml"
    f.write_text(GOOD + '[[wan.link]]\nfrom = "a"\nto = "b"\nlatency = "7ms"\n')
    p = platform.load(f)
    assert p.wan[("a", "b")].latency == pytest.approx(0.007)
    assert p.wan[("b", "a")].latency == pytest.approx(0.001)
    assert p.wan[("a", "b")].bandwidth == p.wan[("b", "a")].bandwidth  # inherited default
    p2 = platform.load(f, ["wan.latency=3ms"])
    assert {m.latency for m in p2.wan.values()} == {0.003}


GOOD = """
[clusters.a]
hosts = 2
[clusters.b]
hosts = 2
[wan]
latency = "1ms"
bandwidth = "1Gbit"
"""

BAD = [
    ("not toml [", "not valid TOML"),
    ("", "clusters: expected at least one"),
    ("[layer]\nclusters = 'platform'\n", 'or, on a real site, layer.clusters = "auto"'),
    (GOOD.replace('latency = "1ms"', 'latency = "1 parsec"'), "wan.latency: unknown time unit"),
    (
        GOOD.replace('latency = "1ms"', "latency = 5"),
        "wan.latency: expected a duration with a unit",
    ),
    (GOOD.replace('bandwidth = "1Gbit"', 'bandwidth = "fast"'), "wan.bandwidth: expected a rate"),
    (
        GOOD.replace("hosts = 2", "hosts = 0", 1),
        "clusters.a.hosts: expected a whole number from 1 to 65536",
    ),
    (GOOD.replace("hosts = 2", 'hosts = "two"', 1), "clusters.a.hosts: expected a whole number"),
    (
        GOOD + "[layer]\ncollectives = 'magic'\n",
        "layer.collectives: expected one of native, isthmus",
    ),
    (GOOD + "colour = 'blue'\n", "wan.colour: unknown key"),
    (GOOD.replace("[wan]", "[wan]\nloss = 1.5"), "wan.loss: expected a number from 0 to 1"),
    (GOOD.replace("[wan]", "[wan]\njitter_distribution = 'pareto'"), "wan.jitter_distribution"),
    (GOOD.replace("[wan]\n", "[elsewhere]\n"), "elsewhere: unknown key"),
    ("[clusters.a]\nhosts=1\n[clusters.b]\nhosts=1\n", "clusters 'a' and 'b' are not joined"),
    (GOOD + '[[wan.link]]\nbetween = ["a", "c"]\n', "unknown cluster 'c'"),
    (GOOD + '[[wan.link]]\nfrom = "a"\nto = "a"\n', "two different clusters"),
    (GOOD + '[[wan.link]]\nlatency = "1ms"\n', "expected 'between = [A, B]'"),
    (GOOD + '[zippers.z]\nclusters = ["a"]\n', "zippers.z.clusters: expected two or more"),
    (GOOD + '[io]\ncluster = "nowhere"\n', "io.cluster: unknown cluster 'nowhere'"),
    (GOOD.replace("[clusters.a]", "[clusters.'a b']"), "a cluster name is letters"),
    (
        GOOD.replace(
            "[clusters.a]\nhosts = 2", "[clusters.a]\nhosts = 2\nlan = { emulate = 'yes' }"
        ),
        "clusters.a.lan.emulate: expected true or false",
    ),
    (
        GOOD.replace("hosts = 2", "hosts = 2\nlauncher = 'pbs'", 1),
        "clusters.a.launcher: expected one of mpi, slurm",
    ),
    (
        GOOD.replace("hosts = 2", "hosts = 2\nslurm = { login = 'a0' }", 1),
        'clusters.a.slurm: only with launcher = "slurm"',
    ),
    (
        GOOD.replace("hosts = 2", "hosts = 2\nlauncher = 'slurm'\nslurm = { login = 'b0' }", 1),
        "clusters.a.slurm.login: 'b0' is no host of the cluster or of a zipper joining it",
    ),
    (
        GOOD.replace(
            "hosts = 2", "hosts = 2\nlauncher = 'slurm'\nslurm = { partition = 'a b' }", 1
        ),
        "clusters.a.slurm.partition: expected a partition name",
    ),
    (
        GOOD.replace("hosts = 2", "hosts = 2\nlauncher = 'slurm'", 1)
        + '[zippers.z]\nclusters = ["a", "b"]\nranks_per_host = 1\n',
        "zippers.z.ranks_per_host: ranks on a zipper host of the Slurm cluster 'a'",
    ),
    (
        "[clusters.a]\nhost_patterns = ['x*']\nlauncher = 'slurm'\n",
        'clusters.a.launcher: "slurm" on the emulated platform only',
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_platform(tmp_path: Path, isthmus: Run, text: str, message: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(UserError, match=message.replace("[", r"\[")):
        platform.load(f)
    done = isthmus("platform", "check", f)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(f) in lines[0] and message in lines[0]
    assert "Traceback" not in done.stderr


def test_missing_file_and_bad_set(isthmus: Run) -> None:
    done = isthmus("platform", "check", "/nonexistent.toml")
    assert done.returncode == 2 and "no such platform file" in done.stderr
    done = isthmus("platform", "show", PLATFORMS / "two-clusters.toml", "--set", "wan.latency")
    assert done.returncode == 2 and "expected KEY=VALUE" in done.stderr
    done = isthmus("platform", "show", PLATFORMS / "two-clusters.toml", "--set", "wan.latency=soon")
    assert done.returncode == 2 and "--set wan.latency=soon" in done.stderr


def test_a_real_site_may_leave_the_clusters_to_discovery(isthmus: Run) -> None:
    """With layer.clusters = "auto" a real site's file needs no [clusters]: not emulated,
    -n gives the ranks, and `platform show` says who finds the clusters."""
    p = platform.load(PLATFORMS / "site-auto.toml")
    assert p.clusters == () and not p.emulated and p.layer.clusters == "auto"
    done = isthmus("platform", "show", PLATFORMS / "site-auto.toml")
    assert done.returncode == 0 and "finds them at MPI_Init" in done.stdout, done.stderr


def test_show_summarizes(isthmus: Run) -> None:
    done = isthmus("platform", "show", PLATFORMS / "das-4x2.toml")
    assert done.returncode == 0, done.stderr
    for word in ("ams", "utrecht", "10ms", "8Mbit/s", "Wide-area links"):
        assert word in done.stdout


def test_placement_block_and_round_robin() -> None:
    das = PLATFORMS / "das-4x2.toml"
    uneven = ("clusters.ams.hosts=3", "clusters.delft.hosts=1")
    p = platform.load(das, uneven)
    assert p.rank_clusters() == ["ams"] * 3 + ["delft"] + ["leiden"] * 2 + ["utrecht"] * 2
    rr = platform.load(das, (*uneven, "layer.placement=round-robin"))
    assert rr.rank_clusters() == [
        "ams", "delft", "leiden", "utrecht", "ams", "leiden", "utrecht", "ams",
    ]  # fmt: skip
    assert rr.rank_blocks()[:2] == [("ams", 1), ("delft", 1)]
    with pytest.raises(UserError, match=r"layer\.placement"):
        platform.load(das, ("layer.placement=scattered",))


def test_the_example_site_file_reads() -> None:
    """examples/sites/ stays a valid site file for its platform (docs/sites.md)."""
    from isthmus.config import sites

    p = platform.load(PLATFORMS / "site-slurm.toml")
    f = sites.load(
        PLATFORMS.parent / "sites" / "two-slurm-clusters.toml", [c.name for c in p.clusters], "x"
    )
    assert [s.name for s in f.sites] == ["east", "west"] and f.sites[0].ranks == 64
    assert f.forwarders[0].reach == (("east", "10.1.0.5:7300"), ("west", "192.168.7.5:7300"))
