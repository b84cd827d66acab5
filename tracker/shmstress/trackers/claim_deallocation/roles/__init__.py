"""The claim deallocation tracker's roles, one module each."""
