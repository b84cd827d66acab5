"""The shmstress command line: argument parsing and exit codes."""
