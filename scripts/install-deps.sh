#!/usr/bin/env bash
# Installs what isthmus needs on Debian 12: the two MPI implementations, compilers,
# iproute2, SimGrid (SMPI, for comparisons), and a Python venv with pinned dependencies.
# Idempotent: when everything is present it only checks (well under a second).
#   scripts/install-deps.sh          what building and testing need
#   scripts/install-deps.sh demo     also the applications of the demo and examples/sweeps/ (LAMMPS, NetPIPE, HPCC)
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(
  openmpi-bin libopenmpi-dev mpich libmpich-dev libucx-dev gfortran g++ cmake make pkg-config
  python3 python3-venv python3-mpi4py python3-numpy iproute2 libsimgrid-dev
  chromium  # the report test renders the page headless
)
[ "${1:-}" = demo ] && apt_packages+=(lammps netpipe-openmpi netpipe-mpich2 hpcc)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "install-deps: installing Debian packages: ${missing[*]}" >&2
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

# The venv uses Debian's python3 (3.11), the interpreter python3-mpi4py is built for.
stamp=.venv/.isthmus-stamp
want=$(cat requirements.lock pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "install-deps: preparing .venv" >&2
  [ -x .venv/bin/python ] || /usr/bin/python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.lock
  .venv/bin/pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e .
  echo "$want" > "$stamp"
fi
