"""perf-changelog.yaml: parsing, validation, fixes and merge operations (pure)."""
