"""The object model: kinds, names, label selectors, conditions, validation."""
