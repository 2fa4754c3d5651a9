"""The repository's contract at a commit, pure: when a master-config finding of a change
is the change's mistake and when it is ixtool's newer schema meeting a tree of its time.

ixtool judges master configs by one schema (the generator of docs/sweep.md), but a
change is made against its base, whose generator may have had another contract: a field
added later (``kv-offload-backend`` as a string before it became a mapping), a rule that
came later (``disagg: true`` without ``kv-p2p-transfer``), a key that was renamed.  Two
facts tell the cases apart, both read from the change itself:

* **as on main** — the base's own entries have the same finding (same rule, same
  *contract class*: the message with the config key, list positions and entry-specific
  values taken out, see :func:`describe`).  The base was merged and its sweeps ran: what
  its entries share is the contract the repository's generator had then, not a mistake
  of the change.  Such a finding of the change is a warning that says how many base
  entries have it; a finding whose class the base does not have stays an error.
* **the generator changes** — the change edits the repository's own generator (a Python
  file that spells master-config keys, :func:`generator_fields`) on lines that name the
  field a finding is about: ixtool's schema may be behind the generator the change brings,
  so the finding is a warning that says so.

Only schema and semantic findings of master-config entries (SW2xx, SW3xx) and unknown
runner labels (SW401) have a contract class: key names (SW1xx), missing scripts and
recipes (SW403/SW404, the class would name the file) and runners.yaml (SW5xx) are judged
as they are.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from inferencex_tools.report.findings import Finding, Severity
from inferencex_tools.sweep.checks import where

# rules whose findings are about the contract (schema and semantics of an entry, the
# runner label an entry names), never about a file that is missing or a key's spelling
_CONTRACT_RULES = re.compile(r"SW[23]\d\d|SW401")
# a found value in a message: '"native" (a string)', '5 (an integer)' → its kind; a bare
# one ('gb300', 0) → "a value", except where the value is what the rule is about (an
# allowed literal, SW206)
_FOUND = re.compile(r"found (?:.+?) \((an? [a-z]+)\)")
_FOUND_BARE = re.compile(r"\bfound ('[^']*'|\"[^\"]*\"|-?[\d.]+)$")
_LITERAL_RULES = ("SW206",)
_NAMED = re.compile(r"(?:key|field) '([A-Za-z][A-Za-z0-9_.-]*)'")  # unknown / missing keys
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*")
# a Python file that reads master configs spells their keys (the generator's models)
_READS_MASTERS = re.compile(r"""["']search-space["']""")


def _shape(path: tuple[Any, ...]) -> str:
    """The location without the config key and list positions: ``scenarios.
    agentic-coding[].search-space[].kv-offload-backend``."""
    out = ""
    for p in path[1:]:
        out += "[]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def describe(rule: str, path: tuple[Any, ...], message: str, key: str,
             vocabulary: Iterable[str]) -> dict[str, Any] | None:
    """The contract class of a master-config finding of ``rule`` at ``path`` (``path[0]``
    the config key ``key``) and the fields it is about, or None when the rule has none.
    ``vocabulary``: the master-config field names (the schema's)."""
    if not _CONTRACT_RULES.fullmatch(rule) or not path or path[0] != key:
        return None
    text = message
    for prefix in (where(path), key):
        if text.startswith(prefix + ": "):
            text = text[len(prefix) + 2:]
            break
    text = _FOUND.sub(r"found \1", text)
    if rule not in _LITERAL_RULES:
        text = _FOUND_BARE.sub("found a value", text)
    last = next((p for p in reversed(path[1:]) if isinstance(p, str)), None)
    words = set(vocabulary)
    fields = {last} if last else set()
    fields |= set(_NAMED.findall(text)) | {w for w in _WORD.findall(text) if w in words}
    return {"contract": f"{rule} {_shape(path)}: {text}", "fields": sorted(fields)}


def contract_of(f: Finding) -> str | None:
    c = f.data.get("contract") if f.data else None
    return c if isinstance(c, str) else None


def generator_fields(changes: Iterable[tuple[str, str | None, str | None]],
                     fields: Iterable[str]) -> dict[str, str]:
    """The master-config fields (of ``fields``) a change's edits of the repository's
    generator name: field → the file.  ``changes``: (path, text at the base, text at the
    head) of each changed ``*.py`` file; a generator file is one that spells master-config
    keys as string literals (``"search-space"``) at the base (a file the change adds, or
    makes look like one, decides nothing).  A field is named on a changed code line (added
    or removed, comments left out) as a literal (``"kv-offload-backend"``) or an
    identifier (``kv_offload_backend``)."""
    import difflib

    wanted = {f: re.compile(r"(?<![\w-])(?:" + re.escape(f) + "|" + re.escape(
        f.replace("-", "_")) + r")(?![\w-])") for f in set(fields)}
    out: dict[str, str] = {}
    for path, before, after in changes:
        if not path.endswith(".py") or before is None or not _READS_MASTERS.search(before):
            continue  # the base's generator: a file the change adds decides nothing
        a, b = (before or "").splitlines(), (after or "").splitlines()
        for line in difflib.unified_diff(a, b, lineterm="", n=0):
            if line.startswith(("+++", "---")) or not line.startswith(("+", "-")):
                continue
            code = line[1:].split("#", 1)[0]
            for f, rx in wanted.items():
                if f not in out and rx.search(code):
                    out[f] = path
    return out


def judge(new: Iterable[Finding], base: Iterable[Finding],
          generator: dict[str, str] | None = None) -> list[Finding]:
    """The change's own findings ``new`` (not at the base by fingerprint), judged by the
    base's contract: an error whose contract class ``base`` (the base's findings, every
    entry) has is a warning "as on main", one about a field the change's generator edits
    (``generator``: field → file) a warning "ixtool's schema may be behind"."""
    from inferencex_tools.report.adopt import identity

    seen = Counter(c for f in base if (c := contract_of(f)) is not None)
    out: list[Finding] = []
    for f in new:
        c = contract_of(f)
        if c is None or f.severity is not Severity.ERROR:
            out.append(f)
            continue
        n = seen.get(c, 0)
        edited = sorted(x for x in f.data.get("fields", ()) if x in (generator or {}))
        if n:
            why = (f"as on main: {n} entr{'y' if n == 1 else 'ies'} at the base "
                   "ha" + ("s" if n == 1 else "ve") + " it")
            hint = ("the base's own entries have this finding: it is the contract of the "
                    "repository's generator at this commit (ixtool's schema is newer); "
                    "fix it with them, or keep the repository's form")
        elif edited:
            assert generator is not None
            why = (f"ixtool's schema may be behind: this change edits the generator's "
                   f"{', '.join(edited)} ({generator[edited[0]]})")
            hint = ("the change brings its own generator contract for this field; check "
                    "that its generator accepts the entry (ixtool judges by its schema)")
        else:
            out.append(f)
            continue
        out.append(replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                           hint=hint, data={**f.data, "identity": identity(f)}))
    return out
