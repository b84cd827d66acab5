"""Free mode: real parallelism with noise at every point."""
