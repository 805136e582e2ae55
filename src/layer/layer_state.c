/* The two variables every wrapper reads (layer.h): whether the profiler records, and how
 * deep in the layer's own calls this thread is. A file of their own, so that the files
 * which use them (the wrappers, MPI-IO on pio) and layer.c, which drives them, use each
 * other one way only. */
#include "layer.h"

int ist_profiling;
_Thread_local int ist_depth __attribute__((tls_model("initial-exec")));
