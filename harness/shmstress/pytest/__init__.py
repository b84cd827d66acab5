"""The pytest plugin: the stress marker, the shmstress_run fixture, campaigns as test items."""
