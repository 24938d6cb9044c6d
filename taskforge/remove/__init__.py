"""Removing a feature: libcst transforms for definitions, aliases, exports and tests."""
