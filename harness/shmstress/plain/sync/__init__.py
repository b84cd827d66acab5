"""The instrumented ``multiprocessing`` primitives: what a scenario's code calls in a run.

Each module is one primitive kept as a small state machine in the board's
object table, with a point before every operation. In controlled mode one
process runs at a time, so an operation's transition needs no lock of its own;
a process that would block parks at its point with what it waits for, and the
coordinator grants the point only once that is there.
"""
