"""shmstress bench: figures measured as ratios within one run."""
