"""The device group tracker's roles, one module each."""
