"""Reproduction: repro bundles, their replay in controlled mode, and shrinking."""
