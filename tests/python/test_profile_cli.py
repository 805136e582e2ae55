"""`isthmus profile show` and `plot` on a real profile; bad profile files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import Run, profile_run

# One pytest process runs this file: its module fixture runs once (make test: -n 2).
pytestmark = pytest.mark.xdist_group("profile_cli")


@pytest.fixture(scope="module")
def profile_file(
    tmp_path_factory: pytest.TempPathFactory, apps: dict[tuple[str, str], Path]
) -> Path:
    out = tmp_path_factory.mktemp("profile") / "p.json"
    profile_run(apps[("openmpi", "c")], out)
    return out


def test_show_prints_every_table(isthmus: Run, profile_file: Path) -> None:
    done = isthmus("profile", "show", profile_file)
    assert done.returncode == 0, done.stderr
    for title in (
        "Time per rank",
        "MPI functions",
        "Calls per message size",
        "Traffic inside clusters",
        "Bytes between clusters",
        "Busiest rank pairs",
        "Collectives per call site",
    ):
        assert title in done.stdout
    assert "MPI_Sendrecv" in done.stdout and "512B - <1KiB" in done.stdout
    assert "pattern.c:50" in done.stdout  # the 4 Allreduce calls' line, named by addr2line


def test_plot_writes_a_png(isthmus: Run, profile_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "matrix.png"
    done = isthmus("profile", "plot", profile_file, "-o", out)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 10_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["matrix.png"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not JSON"),
        ('{"schema": "other"}', "not an isthmus profile"),
        ('{"schema": "isthmus-profile", "version": 99}', "profile version 99"),
        ('{"schema": "isthmus-profile", "version": 1}', "incomplete profile"),
    ],
)
def test_bad_profiles(isthmus: Run, tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "p.json"
    f.write_text(content)
    for action in (["show", f], ["plot", f, "-o", tmp_path / "x.png"]):
        done = isthmus("profile", *action)
        assert done.returncode == 2
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.png").exists()


def test_report_is_one_html_page(isthmus: Run, profile_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = isthmus("profile", "report", profile_file, "-o", out)
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "data:image/png;base64," in page
    assert "MPI functions" in page and "Busiest rank pairs" in page
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_call_sites_without_debugging_information_keep_object_and_address() -> None:
    """addr2line finds no line in a stripped program (or no program at all): the site is
    named by its object and address."""
    from isthmus.profile import where_in_source

    sites = [("MPI_Bcast", "/usr/bin/true", 0x1234), ("MPI_Barrier", "/nonexistent/app", 0x99)]
    where = where_in_source(sites)
    assert where[sites[0]] == "true +0x1234"  # Debian's coreutils are stripped
    assert where[sites[1]] == "app +0x99"


def test_add_forwarders_merges_a_real_sites_stats(
    isthmus: Run, profile_file: Path, tmp_path: Path
) -> None:
    """A real site's forwarder writes --stats; add-forwarders merges it into the profile
    (bad or missing files: one line, exit 2, the profile untouched)."""
    prof = tmp_path / "p.json"
    prof.write_bytes(profile_file.read_bytes())
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "other"}')
    for stats, message in ((bad, "not forwarder statistics"), (tmp_path / "no.json", "no such")):
        done = isthmus("profile", "add-forwarders", prof, stats)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert prof.read_bytes() == profile_file.read_bytes()
    stats = tmp_path / "gate.json"
    stats.write_text(
        json.dumps(
            {
                "schema": "isthmus-forwarder-stats", "version": 1, "name": "gate", "ranks": 4,
                "seconds": 1.5, "dropped_bytes": 0, "wait_histogram_us": [0, 3],
                "pairs": [{"src": 0, "dst": 3, "frames": 3, "bytes": 300,
                           "wait_seconds": 3e-6, "wait_max_seconds": 1.5e-6, "held": 1}],
                "connections": [{"rank": r, "bytes_in": 0, "bytes_out": 0} for r in range(4)],
            }
        )
    )  # fmt: skip
    done = isthmus("profile", "add-forwarders", prof, stats)
    assert done.returncode == 0, done.stderr
    shown = isthmus("profile", "show", prof)
    assert "Forwarder gate" in shown.stdout and "rank 0 (" in shown.stdout


def test_forwarder_waits_are_virtual_under_dilation() -> None:
    """The forwarder runs in real time: merged into a dilated run's profile, its waits and
    duration are divided by K, as the layer's own times are."""
    from isthmus.profile import forwarders

    pair = {"src": 0, "dst": 1, "frames": 2, "bytes": 10, "wait_seconds": 8e-6,
            "wait_max_seconds": 6e-6, "held": 0}  # fmt: skip
    stats = {"name": "g", "seconds": 4.0, "dropped_bytes": 0, "pairs": [pair],
             "connections": [], "wait_histogram_us": [0, 0, 1, 1]}  # fmt: skip
    (m,) = forwarders.merged([stats], 4.0)
    assert m["seconds"] == 1.0 and m["dilation"] == 4.0
    assert m["pairs"][0]["wait_seconds"] == 2e-6 and m["pairs"][0]["wait_max_seconds"] == 1.5e-6
    assert m["wait_histogram_real_us"] == [0, 0, 1, 1]  # kept in real microseconds
