"""Plain-code scenarios the tests run under ``shmstress.plain`` (ordinary multiprocessing code)."""
