"""Core: shared memory, the control block, the runtime and its locks, noise, errors, exit
reasons, configuration, results, processes and signals.
"""
