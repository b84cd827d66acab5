"""Helpers for tests of trackers: explore interleavings, sequential runs, stress verdicts."""
