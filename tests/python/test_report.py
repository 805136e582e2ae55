"""`isthmus report`: a page from a real sweep, rendered by headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from conftest import ROOT, TWO_CLUSTERS, Run
from isthmus.config import platform as platform_mod
from isthmus.model import plogp
from isthmus.report import sweep_network

CHROMIUM = shutil.which("chromium")
# The flags the machine notes require: no background connections on a closed network.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real sweep: isthmus's pingpong across the WAN at two round trips, with a
    baseline, under Open MPI."""
    from conftest import ISTHMUS

    out = tmp_path_factory.mktemp("sweep") / "out"
    pingpong = ROOT / "build" / "bin" / "openmpi" / "pingpong"
    done = subprocess.run(
        [str(ISTHMUS), "sweep", "-p", str(TWO_CLUSTERS), "--vary", "wan.latency=0,1ms",
         "--name", "pingpong", "--timeout", "120s", "-o", str(out), "--", str(pingpong),
         "--peer", "2", "--max-size", "65536", "--seconds-per-size", "0.02"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def test_the_report_has_every_section_and_renders_in_chromium(
    isthmus: Run, sweep_dir: Path, tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    done = isthmus("report", sweep_dir, "-o", page)
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    for heading in (
        "Applications against the round trip",
        "Point-to-point bandwidth",
        "Model against measurement",
        "Communication matrices",
        "Points: time and traffic",
        "How it was made",
    ):
        assert heading in text, heading
    assert "Open MPI" in text  # the library's version string, from the profiles
    images = re.findall(r'src="data:image/png;base64,', text)
    assert len(images) == 4  # the app against RTT, bandwidth, model, matrix (native only)

    assert CHROMIUM, "chromium is installed by scripts/install-deps.sh"
    profile_dir = tmp_path / "chromium-profile"
    shot = tmp_path / "shot.png"
    url = page.resolve().as_uri()
    common = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}"]
    subprocess.run(
        [*common, f"--screenshot={shot}", "--window-size=1400,2400", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    dom = subprocess.run(
        [*common, "--virtual-time-budget=5000", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    # the page's own script counts the images that decoded
    loaded = re.search(r'data-images="(\d+)/(\d+)"', dom)
    assert loaded, dom[:500]
    assert loaded.group(1) == loaded.group(2) == str(len(images))
    # not blank: a good share of the screenshot is not the background
    img = Image.open(shot).convert("L")
    histogram = img.histogram()
    ink = sum(histogram[:200]) / sum(histogram)
    assert ink > 0.02, ink


def test_report_of_a_directory_that_is_not_a_sweep_is_a_one_line_error(
    isthmus: Run, tmp_path: Path
) -> None:
    done = isthmus("report", tmp_path)
    assert done.returncode == 2
    assert "not a sweep's directory" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "report.html").exists()


def test_the_report_sets_the_bcast_model_against_the_coll_benchmark(
    isthmus: Run, tmp_path: Path
) -> None:
    """One point of the coll benchmark with WAN-aware collectives at a 2 ms round trip:
    the page has the Bcast panel, and the model's prediction it draws is the configured
    one-way latency plus the transfer and LAN terms (no software overhead)."""
    out = tmp_path / "out"
    coll = ROOT / "build" / "bin" / "openmpi" / "coll"
    done = isthmus(
        "sweep", "-p", TWO_CLUSTERS, "--vary", "wan.latency=1ms", "--coll", "isthmus",
        "--no-baseline", "--name", "coll", "--timeout", "120s", "-o", out, "--", coll,
        "--collectives", "bcast", "--max-size", "4096", "--iterations", "5",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = tmp_path / "report.html"
    assert isthmus("report", out, "-o", page).returncode == 0
    assert "Bcast with isthmus collectives against the P-LogP prediction" in page.read_text()

    p = platform_mod.load(TWO_CLUSTERS, ["wan.latency=1ms"])
    params = plogp.from_platform(p)
    small = sweep_network._pipelined_prediction(params, [2, 2], 8)
    big = sweep_network._pipelined_prediction(params, [2, 2], 4096)
    assert 1000 < small < 1300 and small < big, (small, big)
