"""The P-LogP model: its parameters (from the platform or measured), the broadcast
optimizer, lower bounds of collectives, and the SimGrid export."""
