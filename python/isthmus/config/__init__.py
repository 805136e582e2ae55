"""What a run is described by: the platform file, its units, and the collectives' registry."""
