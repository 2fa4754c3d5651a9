"""The edges: YAML, files, git and GitHub adapters."""
