#!/usr/bin/env bash
# Runs an MPI program on 4 ranks with the ASan+UBSan build of libisthmus preloaded (after
# libasan, which must come first), profiling and the WAN-aware collectives on; fails on any sanitizer report, a
# non-zero exit, or a missing profile.  Usage: run_layer_sanitized.sh MPI BUILD_DIR PROGRAM [ARGS]
# With ISTHMUS_PIO_SERVERS set, the program is a pio program: its servers get a fresh directory.
set -euo pipefail
mpi=$1 build=$2 program=$3
shift 3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
forward=(ISTHMUS_PRELOAD ISTHMUS_PROFILE ISTHMUS_CLUSTERS ISTHMUS_COLL ISTHMUS_COLL_SELECT ASAN_OPTIONS
         UBSAN_OPTIONS ISTHMUS_WAIT)
if [ -n "${ISTHMUS_PIO_SERVERS:-}" ]; then
  mkdir "$out/pio"
  export ISTHMUS_PIO_DIR="$out/pio"
  forward+=(ISTHMUS_PIO_SERVERS ISTHMUS_PIO_DIR)
fi
export ISTHMUS_PRELOAD="$(gcc -print-file-name=libasan.so):$build/lib/$mpi/libisthmus-asan.so"
# Our algorithms wherever they apply (the selector's costs have their own test, test_schedule).
export ISTHMUS_PROFILE="$out/profile.json" ISTHMUS_CLUSTERS="a:2,b:2" ISTHMUS_COLL=isthmus \
  ISTHMUS_COLL_SELECT=always
# The MPI libraries themselves leak at exit by design: leak checking is off.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
if [ "$mpi" = openmpi ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  launcher=(mpirun.openmpi --oversubscribe -np 4)
  for v in "${forward[@]}"; do launcher+=(-x "$v"); done
else
  # Over shared memory, MPICH 4.0.2 crashes in an in-place MPI_Reduce with a user-defined
  # operation (docs/collectives.md): TCP, as on the emulated network.
  export UCX_TLS=tcp,self MPIR_CVAR_NOLOCAL=1
  # 4 ranks on 2 cores: MPICH busy-polls, so the layer's sleeping waits, as isthmus run
  # chooses then (layer.wait = auto), and the sleeping forms of the calls run sanitized
  export ISTHMUS_WAIT=sleep
  launcher=(mpiexec.mpich -n 4)
fi
timeout 150 "${launcher[@]}" "$build/bin/isthmus-exec" "$program" "$@" 2>"$out/stderr" || { cat "$out/stderr"; exit 1; }
if grep -E 'ERROR: AddressSanitizer|runtime error:' "$out/stderr"; then exit 1; fi
grep -q '"schema": "isthmus-profile"' "$out/profile.json"
echo "layer under ASan+UBSan with $mpi: ok"
