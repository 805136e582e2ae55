#!/usr/bin/env bash
# Installs what isthmus needs on Debian 12: the two MPI implementations, compilers,
# iproute2, SimGrid (SMPI, for comparisons), Slurm and munge (started per emulated cluster
# by isthmus itself, never as the machine's services), and a Python venv with pinned
# dependencies.
# Idempotent: when everything is present it only checks (well under a second).
#   scripts/install-deps.sh          what building and testing need, with the applications
#                                    the demo, examples/sweeps/ and the zipper tests run
#                                    (LAMMPS, NetPIPE, HPCC)
#   scripts/install-deps.sh demo     the same (kept for the Makefile's demo target)
#   scripts/install-deps.sh experiments  also the applications only experiments run
#                                    (NWChem, ScaLAPACK's test drivers, HPCC for MPICH
#                                    built from Debian's source; docs/experiments.md)
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(
  openmpi-bin libopenmpi-dev mpich libmpich-dev libucx-dev gfortran g++ cmake make pkg-config
  python3 python3-venv python3-mpi4py python3-numpy iproute2 libsimgrid-dev curl
  chromium  # the report test renders the page headless
  gdb  # isthmus run prints the ranks' backtraces when a run exceeds its --timeout
  libfaketime  # dilation/interposition compares the layer's clocks with it
  lammps netpipe-openmpi netpipe-mpich2 hpcc  # applications: demo, sweeps, zipper tests
  slurmctld slurmd slurm-client munge  # a Slurm per emulated cluster (docs/slurm.md)
  libhdf5-openmpi-dev libhdf5-mpich-dev  # parallel HDF5, the MPI-IO test program (docs/mpiio.md)
)
if [ "${1:-}" = experiments ]; then
  # applications only experiments run (examples/sweeps/zipper-apps.toml): NWChem and
  # ScaLAPACK's test drivers, built by Debian for both MPIs
  apt_packages+=(nwchem-openmpi nwchem-mpich scalapack-mpi-test)
fi
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

# HPCC for MPICH, from Debian's source (experiments only: examples/sweeps/zipper-apps.toml)
if [ "${1:-}" = experiments ]; then
  scripts/build-hpcc-mpich.sh
fi

# mpi4py's source distribution, of the version Debian's python3-mpi4py is (3.1.4): make
# test runs its own test suite under the layer (tests/python/test_mpi4py_suite.py), and
# builds it for MPICH (Debian's is built for Open MPI only) for the zipper tests.
# Fetched here, checked, never committed.
suite=.cache/mpi4py-3.1.4
if [ ! -f "$suite/test/runtests.py" ] || [ ! -f "$suite/setup.py" ]; then
  echo "install-deps: fetching mpi4py 3.1.4's test suite" >&2
  sha=17858f2ebc623220d0120d1fa8d428d033dde749c4bc35b33d81a66ad7f93480
  url=https://files.pythonhosted.org/packages/bc/f2/749af7fd0e7703ddca6cea525ab40f26c3ca6cbe6c23658441c6f9705860/mpi4py-3.1.4.tar.gz
  scripts/fetch-checked.sh "$url" "$sha" .cache/mpi4py-source
  rm -rf "$suite"
  mv .cache/mpi4py-source/mpi4py-3.1.4 "$suite"
  rm -rf .cache/mpi4py-source
fi
# ... built for MPICH into .cache/mpi4py-mpich (PYTHONPATH=.cache/mpi4py-mpich).
if ! ls .cache/mpi4py-mpich/mpi4py/MPI.*.so > /dev/null 2>&1; then
  echo "install-deps: building mpi4py 3.1.4 for MPICH (about 10 s)" >&2
  rm -rf .cache/mpi4py-mpich .cache/mpi4py-mpich-build
  # -O0: a test build, compiled in 10 s instead of 30 (measured) on a clean clone
  (cd "$suite" && MPICC=mpicc.mpich CFLAGS=-O0 /usr/bin/python3 setup.py build \
      --build-base ../mpi4py-mpich-build > ../mpi4py-mpich-build.log 2>&1) ||
    { echo "install-deps: building mpi4py for MPICH failed: see .cache/mpi4py-mpich-build.log" >&2; exit 1; }
  mkdir -p .cache/mpi4py-mpich
  cp -r .cache/mpi4py-mpich-build/lib.*/mpi4py .cache/mpi4py-mpich/
fi
