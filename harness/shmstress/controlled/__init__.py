"""Controlled mode: one worker runs at a time, a strategy picks who; every execution replays."""
