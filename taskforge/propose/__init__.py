"""Which features to remove: candidates grown on the reference graph, their difficulty."""
