"""The object store: one protocol (base.py), two implementations (sqlite, kubernetes)."""
