"""``ixtool review``: one deterministic review of a recipe PR (docs/review.md)."""
