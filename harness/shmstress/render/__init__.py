"""Rendering: klog lines, the log view and snippet, explanations, run summaries, rerun
commands, progress.
"""
