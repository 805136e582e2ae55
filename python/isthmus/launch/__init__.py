"""Starting MPI jobs: the MPI flavours, the launchers with libisthmus preloaded (isthmus run),
and the forwarders on zipper hosts."""
