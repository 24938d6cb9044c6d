"""The bubblewrap backend: daemonless sandboxes and root-filesystem environments."""
