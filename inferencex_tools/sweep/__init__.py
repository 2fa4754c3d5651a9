"""The sweep matrix: master configs → benchmark job rows (spec SWEEP.md)."""
