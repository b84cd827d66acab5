"""Trackers as plugins: the protocol a tracker implements, its words, finding it, checking it,
and assembling it for a run.
"""
