"""Canonical GitHub numbers read from untrusted text (pure).

A PR number or a workflow-run id is accepted only in canonical form: decimal
digits without sign, spaces, underscores or leading zeros, positive, and
bounded (``pull/0``, ``pull/007`` and 5,000-digit numbers are refused; Python's
``int()`` would take ``" 7"``, ``"+7"``, ``"0_7"`` and raise on > 4,300 digits).
"""

from __future__ import annotations

import re
from typing import Any, TypeGuard

MAX_PR_NUMBER = 2**31 - 1  # GitHub issue/PR numbers are 32-bit
MAX_RUN_ID = 2**63 - 1  # workflow-run and comment ids are signed 64-bit

_CANONICAL = re.compile(r"[1-9][0-9]{0,18}")


def _parse(text: str, bound: int) -> int | None:
    if not isinstance(text, str) or not _CANONICAL.fullmatch(text):
        return None
    value = int(text)
    return value if value <= bound else None


def pr_number(text: str) -> int | None:
    """``text`` as a PR number, or None when it is not canonical or out of range."""
    return _parse(text, MAX_PR_NUMBER)


def run_id(text: str) -> int | None:
    """``text`` as a workflow-run id, or None when it is not canonical or out of range."""
    return _parse(text, MAX_RUN_ID)


def is_pr_number(value: Any) -> TypeGuard[int]:
    """A JSON value that is a valid PR number (an int, not a bool, in range)."""
    return (isinstance(value, int) and not isinstance(value, bool)
            and 1 <= value <= MAX_PR_NUMBER)


def is_run_id(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_RUN_ID
