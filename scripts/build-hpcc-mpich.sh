#!/usr/bin/env bash
# HPCC for MPICH (Debian builds its hpcc package for Open MPI only): the upstream tarball
# of Debian's hpcc source package (1.5.0, checked against the .dsc's SHA-256), built with
# MPICH's mpicc against Debian's reference BLAS, into .cache/hpcc-mpich/hpcc. Fetched and
# built here, never committed. scripts/install-deps.sh experiments runs it; idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/hpcc-mpich
[ -x "$out/hpcc" ] && exit 0
sha=0a6fef7ab9f3347e549fed65ebb98234feea9ee18aea0c8f59baefbe3cf7ffb8
url=http://deb.debian.org/debian/pool/main/h/hpcc/hpcc_1.5.0.orig.tar.gz
blas=/usr/lib/x86_64-linux-gnu/libblas.so.3
[ -e "$blas" ] || { echo "build-hpcc-mpich: $blas is missing (Debian's libblas3)" >&2; exit 1; }
echo "build-hpcc-mpich: fetching and building HPCC 1.5.0 for MPICH (a few minutes)" >&2
mkdir -p .cache
tmp=$(mktemp -d .cache/hpcc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
scripts/fetch-checked.sh "$url" "$sha" "$tmp/source"
src=$tmp/source/hpcc-1.5.0
# HPL's build file (hpl/setup/Make.Linux_PII_FBLAS's shape): MPICH's compiler wrapper
# brings MPI; the Fortran BLAS through its C names (dgemm_: -DAdd_).
cat > "$src/hpl/Make.isthmus_mpich" <<EOF
SHELL        = /bin/sh
CD           = cd
CP           = cp
LN_S         = ln -s
MKDIR        = mkdir
RM           = /bin/rm -f
TOUCH        = touch
ARCH         = \$(arch)
TOPdir       = ../../..
INCdir       = \$(TOPdir)/include
BINdir       = \$(TOPdir)/bin/\$(ARCH)
LIBdir       = \$(TOPdir)/lib/\$(ARCH)
HPLlib       = \$(LIBdir)/libhpl.a
LAlib        = $blas
F2CDEFS      = -DAdd_ -DF77_INTEGER=int -DStringSunStyle
HPL_INCLUDES = -I\$(INCdir) -I\$(INCdir)/\$(ARCH)
HPL_LIBS     = \$(HPLlib) \$(LAlib) -lm
HPL_OPTS     =
HPL_DEFS     = \$(F2CDEFS) \$(HPL_OPTS) \$(HPL_INCLUDES)
CC           = mpicc.mpich
CCNOOPT      = \$(HPL_DEFS)
CCFLAGS      = \$(HPL_DEFS) -O2 -fcommon -w
LINKER       = mpicc.mpich
LINKFLAGS    = \$(CCFLAGS)
ARCHIVER     = ar
ARFLAGS      = r
RANLIB       = echo
EOF
make -C "$src" arch=isthmus_mpich > "$tmp/build.log" 2>&1 || {
  tail -20 "$tmp/build.log" >&2
  echo "build-hpcc-mpich: the build failed (its log's end above)" >&2
  exit 1
}
mkdir -p "$out"
cp "$src/hpcc" "$out/hpcc.part" && mv "$out/hpcc.part" "$out/hpcc"
echo "build-hpcc-mpich: built $out/hpcc" >&2
