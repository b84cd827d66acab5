"""Plain ``multiprocessing`` code under shmstress: no tracker, no points written by hand.

A scenario is an ordinary function that starts processes, shares ``Value``\\ s,
``Array``\\ s and locks with them, joins them and asserts. In a scenario's
processes the ``multiprocessing`` primitives are replaced by instrumented ones
(``sync/``) whose every operation is a scheduling point, so a strategy decides
every interleaving of what the processes share, a waiter is blocked on a named
object held by a named process, and a cycle of waiters is a deadlock, not a hang.
"""
