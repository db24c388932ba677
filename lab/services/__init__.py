"""One module per lab service (see lab/__main__.py)."""
