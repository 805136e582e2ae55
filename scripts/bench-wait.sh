#!/usr/bin/env bash
# The waiting mode for oversubscribed runs: 8 ranks on this machine's cores, one emulated
# cluster, time per 8-byte Allreduce with layer.wait=spin and =sleep, Open MPI and MPICH,
# repeated; writes results/net/wait-mode.json.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p results/net
repeats=${REPEATS:-3}
.venv/bin/python - "$repeats" <<'PY'
import json, os, statistics, subprocess, sys
from datetime import UTC, datetime
from isthmus.paths import git_revision
repeats = int(sys.argv[1])
rows = []
for mpi in ("openmpi", "mpich"):
    for mode in ("spin", "sleep"):
        times = []
        for _ in range(repeats):
            out = subprocess.run(["bin/isthmus", "run", "-p", "examples/platforms/one-cluster.toml",
                                  "--set", "clusters.local.hosts=8", "--set", f"layer.wait={mode}",
                                  "--mpi", mpi, "--timeout", "5min", "--", f"build/bin/{mpi}/allreduce_loop", "100"],
                                 capture_output=True, text=True, check=True).stdout
            times.append(json.loads(out)["us_per_allreduce"])
        rows.append({"mpi": mpi, "wait": mode, "us_per_allreduce": times,
                     "median_us": statistics.median(times)})
        print(f"{mpi} {mode}: median {statistics.median(times):.1f} us ({', '.join(f'{t:.1f}' for t in times)})")
result = {"benchmark": "8-byte Allreduce, 8 ranks on %d cores, one emulated cluster" % os.cpu_count(),
          "command": "scripts/bench-wait.sh (REPEATS=%d)" % repeats, "git_revision": git_revision(),
          "date": datetime.now(UTC).isoformat(timespec="seconds"), "rows": rows}
open("results/net/wait-mode.json", "w").write(json.dumps(result, indent=1) + "\n")
PY
