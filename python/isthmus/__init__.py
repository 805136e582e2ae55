"""isthmus: run unmodified MPI applications across several clusters and measure the cost."""

__version__ = "0.1.0"
