"""``ixtool al``: the measured acceptance length of a finished sweep, audited against what
the launches forced and what the golden curves say (docs/al-audit.md)."""
