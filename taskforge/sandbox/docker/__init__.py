"""The Docker backend: sandboxes and environment images (the only user of the Docker SDK)."""
