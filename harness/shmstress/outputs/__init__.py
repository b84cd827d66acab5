"""Outputs: where an artifact's bytes may go, and the one way every command writes them.

The bottom of the engine and of the reports alike (it imports nothing of either): a
chart, a report page, a bundle, a results line and a ``--json`` file all go through
``writing``, so none of them can replace a device, follow a planted link or leave half a
file under its name.
"""
