"""The DRA tracker's roles, one module each."""
