#!/usr/bin/env bash
# `make demo`: the multi-cluster experiment in one command. Sweeps the wide-area round trip
# (0-4 ms) of the emulated two-cluster platform (examples/platforms/two-clusters.toml)
# for NetPIPE, isthmus's ping-pong and collective benchmarks, and LAMMPS, under Open MPI
# and MPICH, with native and WAN-aware collectives (examples/demo/sweep.toml), then writes
# the HTML report; then LAMMPS across a zipper host against a direct link of the same
# latency and rate, swept over the link's latency (examples/demo/zipper.toml), in the same
# report. Every point brings its own emulated network up and down. A rerun
# resumes: points already in demo-out/ are kept (remove the directory to start again).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh demo
out=${DEMO_OUT:-demo-out}
mkdir -p "$out"
cores=$(nproc)
echo "== the platform"
bin/isthmus platform show examples/platforms/two-clusters.toml
if [ "$cores" -lt 5 ]; then
  echo "note: 4 ranks and the router share $cores cores: ranks sleep while they wait" \
       "(layer.wait=auto), which adds wake-up time to every figure; ratios between runs" \
       "made the same way (isthmus vs native, RTT vs RTT) are what to read."
fi
echo "== the sweep (examples/demo/sweep.toml), about 8 minutes on 2 cores"
bin/isthmus sweep examples/demo/sweep.toml -o "$out/sweep"
echo "== the zipper (examples/demo/zipper.toml): LAMMPS forwarded against a direct link, about 2 minutes"
bin/isthmus sweep examples/demo/zipper.toml -o "$out/zipper"
bin/isthmus report "$out/sweep" --also "$out/zipper" -o "$out/report.html"
echo
echo "demo: report written to $(pwd)/$out/report.html"
