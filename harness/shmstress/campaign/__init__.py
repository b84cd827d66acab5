"""Campaigns: grids of configurations x trials, one results.jsonl record per trial, repro
bundles beside them.
"""
