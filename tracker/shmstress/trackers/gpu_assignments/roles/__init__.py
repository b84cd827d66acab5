"""The GPU assignments tracker's roles, one module each."""
