"""Recording: every point into per-worker rings and the schedule tape, with no text on the hot
path.
"""
