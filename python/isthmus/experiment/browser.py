"""Headless Chromium (Debian's `chromium`): a page as a reader sees it at a given width,
as a screenshot or as what the page's own script reports. The demo's docs keep
screenshots of its report at a phone's and a wide screen's width; the report's test
reads what its check script found.

Chromium keeps a window at least about 500 pixels wide, so the page is shown in a frame
of the width asked for, inside a wider window; the screenshot is cut to the frame."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from isthmus.errors import UserError

# Nothing in the background: the machines are on a closed network.
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
# The widths the report is made to read at: a phone, a wide screen.
WIDTHS = (390, 1400)
HEIGHT = 2400  # of the frame: what the screenshot shows
# The frame: what the page posts to its parent (window.parent.postMessage) lands on body.
FRAME = """<!DOCTYPE html><html><head><meta charset="utf-8"></head>
<body style="margin:0"><iframe src="{src}"
style="display:block;border:0;width:{width}px;height:{height}px">
</iframe><script>addEventListener('message', function (e) {{
document.body.setAttribute('data-posted', String(e.data)); }});</script></body></html>"""


def _chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        raise UserError("chromium is not installed (scripts/install-deps.sh installs it)")
    return found


def _show(page: Path, width: int, work: Path, *args: str) -> str:
    """Chromium on a frame `width` pixels wide around the page; its standard output."""
    frame = work / "frame.html"
    src = html.escape(page.resolve().as_uri())
    frame.write_text(FRAME.format(src=src, width=width, height=HEIGHT))
    done = subprocess.run(
        [_chromium(), *FLAGS, f"--user-data-dir={work / 'profile'}",
         f"--window-size={max(width + 100, 800)},{HEIGHT + 100}", *args, frame.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise UserError(f"chromium could not open {page}: {done.stderr.strip()[-300:]}")
    return done.stdout


def screenshot(page: Path, width: int, out: Path) -> None:
    """The top of the page as a reader sees it `width` pixels wide (PNG)."""
    from PIL import Image

    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="isthmus-chromium-") as d:
        shot = Path(d) / "shot.png"
        _show(page, width, Path(d), f"--screenshot={shot}")
        with Image.open(shot) as img:
            img.crop((0, 0, width, HEIGHT)).save(out)


def posted(page: Path, width: int) -> str | None:
    """What the page, shown `width` pixels wide, posted to its parent once loaded (its own
    script: window.parent.postMessage(text, '*')); None when it posted nothing."""
    with tempfile.TemporaryDirectory(prefix="isthmus-chromium-") as d:
        dom = _show(page, width, Path(d), "--virtual-time-budget=5000", "--dump-dom")
    found = re.search(r'data-posted="([^"]*)"', dom)
    return html.unescape(found.group(1)) if found else None
