"""What the code and its tests are: symbols, test index, per-test coverage."""
