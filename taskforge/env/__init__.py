"""How a repository is installed and tested: install plan, pytest configuration."""
