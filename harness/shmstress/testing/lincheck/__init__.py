"""Hypothesis writes the concurrent test: generated programs of an object's operations across
processes, schedules drawn with them, and a linearizability verdict (issue 31).

``declaration`` (which operations, with which argument strategies) -> ``program`` (the
program's shape and its strategy) -> ``search`` (one Hypothesis example, one execution of
the plain engine, its schedule drawn by ``controlled.strategies.drawn``) ->
``execution`` (in the execution's ``main``: the lanes, the history, the check) ->
``report`` (the table, the interleaving, the bundle). ``check`` is the way in from pytest.
"""
