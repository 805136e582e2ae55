"""`isthmus platform export --simgrid`: SMPI runs our ping-pong benchmark on the exported
platform, and the simulated round trips are those of the configured links."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import PLATFORMS, ROOT, TWO_CLUSTERS, Run
from isthmus.model.simgrid import smpirun_command


def test_export_mirrors_the_emulated_network(isthmus: Run, tmp_path: Path) -> None:
    xml, hosts = tmp_path / "p.xml", tmp_path / "hosts"
    done = isthmus(
        "platform",
        "export",
        "--simgrid",
        PLATFORMS / "das-4x2.toml",
        "-o",
        xml,
        "--hostfile",
        hosts,
    )
    assert done.returncode == 0, done.stderr
    zone = ET.parse(xml).getroot().find("zone")
    assert zone is not None
    assert len(zone.findall("host")) == 8
    routes = zone.findall("route")
    assert len(routes) == 8 * 7  # every ordered pair of hosts
    names = ("ams", "delft", "leiden", "utrecht")
    assert hosts.read_text().split() == [f"{c}{i}" for c in names for i in range(2)]
    wan = [lk for lk in zone.findall("link") if lk.get("id", "").startswith("wan:")]
    assert len(wan) == 4 * 3 and all(lk.get("latency") == "10000us" for lk in wan)


def test_smpi_runs_on_the_exported_platform(isthmus: Run, tmp_path: Path) -> None:
    xml, hosts, program = tmp_path / "p.xml", tmp_path / "hosts", tmp_path / "pingpong"
    assert (
        isthmus(
            "platform", "export", "--simgrid", TWO_CLUSTERS, "-o", xml, "--hostfile", hosts
        ).returncode
        == 0
    )
    bench = ROOT / "src" / "bench"
    subprocess.run(
        [
            "smpicc",
            "-O2",
            "-o",
            str(program),
            str(bench / "pingpong.c"),
            str(bench / "bench_common.c"),
        ],
        check=True,
        capture_output=True,
    )
    done = subprocess.run(
        [
            *smpirun_command(xml, hosts, 4, [str(program)]),
            "--max-size",
            "1048576",
            "--peer",
            "2",
            "--perturbation",
            "0",
            "--seconds-per-size",
            "0.1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    recs = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    rtt = {r["bytes"]: r["rtt_min_us"] for r in recs if r["record"] == "pingpong"}
    # CM02 is latency plus size over bandwidth: 2 x (5 ms + 25 us + m / 12.5 MB/s)
    for m in (1, 65536, 1048576):
        expected = 2 * (5025 + m / 12.5)
        assert abs(rtt[m] - expected) < 0.01 * expected, (m, rtt[m], expected)
