"""merge-with-reuse: the reuse-assisted merge of benchmark PRs (docs/merge-with-reuse.md)."""
