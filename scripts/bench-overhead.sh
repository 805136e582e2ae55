#!/usr/bin/env bash
# `make bench-overhead`: what libisthmus adds to an MPI call, for Open MPI and MPICH.
# 2 ranks on the machine's own shared-memory transport (no emulation), the three modes of
# src/bench/overhead.c interleaved in one run. Writes results/overhead/overhead-MPI.json
# and results/overhead/overhead.png.
set -euo pipefail
cd "$(dirname "$0")/.."
out=results/overhead
mkdir -p "$out"
rounds=${ROUNDS:-400} iters=${ITERS:-4000}
for mpi in openmpi mpich; do
  echo "overhead: $mpi ($rounds rounds x $iters iterations per mode)" >&2
  raw=$(mktemp)
  bin/isthmus run -p examples/platforms/one-cluster.toml --no-emulation --mpi "$mpi" --profile "$raw.profile" \
    --timeout 10min -- "build/bin/$mpi/overhead" --rounds "$rounds" --iters "$iters" > "$raw"
  .venv/bin/python scripts/overhead_results.py "$raw" "$out/overhead-$mpi.json" \
    "make bench-overhead (ROUNDS=$rounds ITERS=$iters)"
  rm -f "$raw" "$raw.profile"
done
.venv/bin/python scripts/overhead_results.py --plot "$out"/overhead-*.json -o "$out/overhead.png"
