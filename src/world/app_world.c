/* What the application's MPI_COMM_WORLD means (world.h): a file of its own, read by the
 * topology and the world and set by the layer, so that neither uses the other for it. */
#include "world.h"

MPI_Comm ist_app_world = MPI_COMM_WORLD;
