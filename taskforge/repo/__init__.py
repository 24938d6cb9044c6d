"""Where a task's code comes from: a clone at a pinned commit, an sdist, the file layout."""
