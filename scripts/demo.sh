#!/usr/bin/env bash
# `make demo`: a real application (LAMMPS, Lennard-Jones melt, 4 ranks) on the emulated
# two-cluster platform of examples/platforms/two-clusters.toml (5 ms, 100 Mbit/s between
# the clusters), profiled, against the same run on the machine's own network; writes a
# report. Sweeps over RTTs and MPIs, and the full report, come with later issues.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh demo
out=${DEMO_OUT:-demo-out}
mkdir -p "$out"
platform=examples/platforms/two-clusters.toml
lammps=(lmp -in examples/apps/lammps/in.lj -screen none)

echo "== isthmus platform show $platform"
bin/isthmus platform show "$platform"

echo "== LAMMPS (Lennard-Jones, 32,000 atoms, 100 steps) on 4 ranks, machine's own network"
bin/isthmus run -p "$platform" --mpi openmpi --no-emulation --timeout 10min \
  -- "${lammps[@]}" -log "$out/lammps-local.log"
echo "== the same across the emulated clusters, profiled"
bin/isthmus run -p "$platform" --mpi openmpi --profile "$out/lammps.json" --timeout 10min \
  -- "${lammps[@]}" -log "$out/lammps.log"

local_t=$(awk '/^Loop time/ {print $4}' "$out/lammps-local.log")
wan_t=$(awk '/^Loop time/ {print $4}' "$out/lammps.log")
echo "LAMMPS loop time: ${local_t} s on the machine's own network, ${wan_t} s across the" \
     "emulated WAN: $(awk -v a="$wan_t" -v b="$local_t" 'BEGIN {printf "%.1f", a / b}')x slower"

bin/isthmus profile show "$out/lammps.json" | tee "$out/lammps-profile.txt"
bin/isthmus profile plot "$out/lammps.json" -o "$out/lammps-matrix.png"
bin/isthmus profile report "$out/lammps.json" -o "$out/report.html"
echo
echo "demo: report written to $(pwd)/$out/report.html"
