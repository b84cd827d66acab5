"""The Intel GPU device plugin's per-pod assignments, pruned by a periodic cleanup."""
