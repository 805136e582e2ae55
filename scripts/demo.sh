#!/usr/bin/env bash
# `make demo`: profile a real application (LAMMPS, Lennard-Jones melt) running across the
# two clusters of examples/platforms/two-clusters.toml, and write a report.
# Network emulation, sweeps and the full report come with later issues.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh demo
out=${DEMO_OUT:-demo-out}
mkdir -p "$out"
platform=examples/platforms/two-clusters.toml

echo "== isthmus platform show $platform"
bin/isthmus platform show "$platform"

echo "== LAMMPS (Lennard-Jones, 32,000 atoms, 100 steps) on 4 ranks, profiled"
bin/isthmus run -p "$platform" --mpi openmpi --profile "$out/lammps.json" --timeout 10min \
  -- lmp -in examples/apps/lammps/in.lj -log "$out/lammps.log" -screen none
grep -E '^Loop time' "$out/lammps.log" || true

bin/isthmus profile show "$out/lammps.json" | tee "$out/lammps-profile.txt"
bin/isthmus profile plot "$out/lammps.json" -o "$out/lammps-matrix.png"
bin/isthmus profile report "$out/lammps.json" -o "$out/report.html"
echo
echo "demo: report written to $(pwd)/$out/report.html"
