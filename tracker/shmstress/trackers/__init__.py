"""Trackers shipped with shmstress, each registered under the ``shmstress.trackers`` group."""
