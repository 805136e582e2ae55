"""`isthmus report`: a page from a real sweep, rendered by headless Chromium."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from conftest import ROOT, TWO_CLUSTERS, Run
from isthmus.config import platform as platform_mod
from isthmus.experiment import browser
from isthmus.model import plogp
from isthmus.report import sweep_network

# One pytest process runs this file: its module fixture runs once (make test: -n 2).
pytestmark = pytest.mark.xdist_group("report")


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


@pytest.fixture(scope="module")
def report_page(sweep_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import ISTHMUS

    page = tmp_path_factory.mktemp("report") / "report.html"
    done = subprocess.run(
        [str(ISTHMUS), "report", str(sweep_dir), "-o", str(page)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return page


def test_the_report_opens_with_findings_from_the_data(report_page: Path, sweep_dir: Path) -> None:
    text = report_page.read_text()
    sections = re.findall(r'<section id="([a-z]+)"><h2>([^<]+)</h2>', text)
    assert sections[0] == ("findings", "What the wide-area link costs"), sections
    assert [a for a, _ in sections] == [
        "findings", "apps", "bandwidth", "model", "matrices", "points", "measured",
    ]  # fmt: skip
    assert text.index("<nav>") < text.index('<section id="findings">')
    # The sentence's numbers are the points': the baseline's time and the 1 ms point's.
    rows = json.loads((sweep_dir / "results.json").read_text())
    base = next(r for r in rows if r["baseline"])
    far = next(r for r in rows if r.get("wan.latency") == "1ms")
    assert f"on one cluster it takes {base['app_s']:.3g} s" in text
    assert f"at 2 ms round trip {far['app_s']:.3g} s" in text
    assert f"{far['app_s'] / base['app_s']:.2f} times as long" in text
    assert 'href="#app-pingpong"' in text and 'id="app-pingpong"' in text
    assert "Open MPI" in text  # the library's version string, from the profiles
    assert "isthmus revision: <code>" in text
    assert len(re.findall(r'src="data:image/png;base64,', text)) == 4  # app, bw, model, matrix


# Run in the page before anything else: it records errors (scripts, resources that fail
# to load, console.error) and, once loaded, what a reader would see go wrong.
BROWSER_CHECK = """<script>
var found = [];
addEventListener('error', function (e) {
  var t = e.target;
  found.push(t && t.tagName ? 'cannot load ' + t.tagName : 'error: ' + e.message);
}, true);
var consoleError = console.error;
console.error = function () { found.push('console: ' + [].join.call(arguments, ' '));
  consoleError.apply(console, arguments); };
function scrolls(el) {
  for (; el; el = el.parentElement)
    if (/auto|scroll/.test(getComputedStyle(el).overflowX)) return true;
  return false;
}
addEventListener('load', function () {
  var view = document.documentElement.clientWidth, cut = [], missing = [];
  for (var img of document.images)
    if (!(img.complete && img.naturalWidth > 0)) missing.push(img.alt.slice(0, 60));
  // Cut off or sticking out: content wider than its box (hidden, or running past it) or
  // a box past the window's edge, unless inside something the reader can scroll.
  for (var el of document.body.querySelectorAll('*')) {
    if (el.clientWidth === 0 || scrolls(el)) continue;
    if (el.scrollWidth > el.clientWidth + 1 || el.getBoundingClientRect().right > view + 1)
      cut.push(el.tagName + ': ' + el.textContent.slice(0, 60));
  }
  parent.postMessage(JSON.stringify({
    errors: found, view: view, page: document.documentElement.scrollWidth,
    images: document.images.length, missing: missing, cut: cut}), '*');
});
</script>"""
ARTIFACTS = ROOT / "build" / "test-artifacts" / "report"


def browser_check(page: Path, width: int, shot: Path, work: Path) -> dict[str, Any]:
    """Open a copy of the page with BROWSER_CHECK in headless Chromium, `width` pixels
    wide: what the check found; and a screenshot of the page itself."""
    probe = work / f"probe-{width}.html"
    probe.write_text(page.read_text().replace("<head>", "<head>" + BROWSER_CHECK, 1))
    found = browser.posted(probe, width)
    browser.screenshot(page, width, shot)
    assert found, "the check script did not run"
    result: dict[str, Any] = json.loads(found)
    return result


@pytest.mark.parametrize("width", browser.WIDTHS)  # a phone, a wide screen
def test_the_report_reads_well_in_chromium(report_page: Path, tmp_path: Path, width: int) -> None:
    """No error, nothing wider than the window, every image shown, no text cut off; the
    screenshots stay in build/test-artifacts/report/."""
    shot = ARTIFACTS / f"report-{width}.png"
    found = browser_check(report_page, width, shot, tmp_path)
    assert found["errors"] == [], found
    assert found["page"] <= found["view"], found
    assert found["images"] == 4 and found["missing"] == [], found
    assert found["cut"] == [], found
    # not blank: a good share of the screenshot is not the background
    histogram = Image.open(shot).convert("L").histogram()
    assert sum(histogram[:200]) / sum(histogram) > 0.02


def test_the_browser_check_sees_a_missing_image_and_a_line_too_wide(
    report_page: Path, tmp_path: Path
) -> None:
    """The check above can fail: one image's data broken, one unbreakable line added."""
    broken = tmp_path / "broken.html"
    text = report_page.read_text()
    image = r'src="data:image/png;base64,[^"]{100}'
    text = re.sub(image, 'src="data:image/png;base64,AAAA', text, count=1)
    text = text.replace("</body>", f'<p style="white-space:nowrap">{"x" * 400}</p></body>')
    broken.write_text(text)
    found = browser_check(broken, 390, tmp_path / "broken.png", tmp_path)
    assert len(found["missing"]) == 1, found
    assert found["page"] > found["view"] and found["cut"], found


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
