"""``changelog add``, pure: build one well-formed entry and append it to the file bytes.

The entry is written in the house style of the real file::

    - config-keys:
        - dsr1-fp8-*-sglang
      scenario-type:
        - fixed-seq-len
      description:
        - "What changed and why"
      pr-link: XXX

Descriptions are always double-quoted (JSON escaping is valid YAML, so quotes,
backslashes, tabs and control characters are escaped, never written raw); config
keys are written plain when that is unambiguous and double-quoted otherwise (a
key such as ``*-b300-*`` would be a YAML alias if written plain).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from inferencex_tools.changelog.configkeys import resolve_items
from inferencex_tools.changelog.links import PLACEHOLDER, check_slug, pr_url
from inferencex_tools.changelog.rules import FINAL_NEWLINE, GLOB_EMPTY, KEY_UNKNOWN
from inferencex_tools.changelog.validate import Options, analyze_change
from inferencex_tools.errors import UsageError
from inferencex_tools.report.findings import Finding, Severity

SCENARIO_TYPES = ("fixed-seq-len", "agentic-coding")
_PLAIN_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/+-]*(?:\*[A-Za-z0-9._/+-]*)*\*?$")
_YAML_SPECIAL_RX = re.compile(
    r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|"
    r"null|Null|NULL|~|[-+]?[0-9_.:]+(?:[eE][-+]?[0-9]+)?|0x[0-9a-fA-F_]+|0o?[0-7_]+|"
    r"[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN))$"
)

_UNSAFE_RX = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")


@dataclass
class EntrySpec:
    config_keys: list[str]
    descriptions: list[str]
    scenario_types: list[str] = field(default_factory=list)
    pr: int | None = None
    repo: str = "SemiAnalysisAI/InferenceX"

    @property
    def link(self) -> str:
        return pr_url(self.repo, self.pr) if self.pr is not None else PLACEHOLDER


@dataclass
class AddOutcome:
    data: bytes | None  # None: refused (see findings)
    entry: bytes  # the entry block that was (or would have been) appended
    findings: list[Finding] = field(default_factory=list)
    message: str = ""


def _scalar_key(key: str) -> str:
    if _PLAIN_RX.match(key) and not _YAML_SPECIAL_RX.match(key):
        return key
    return json.dumps(key, ensure_ascii=False)


def _scalar_text(text: str) -> str:
    """A YAML double-quoted scalar: JSON escaping, plus escapes for characters YAML does
    not allow raw (C1 controls, U+FEFF, non-characters) or that split lines (NEL,
    U+2028/U+2029)."""
    quoted = json.dumps(text, ensure_ascii=False)
    return _UNSAFE_RX.sub(lambda m: f"\\u{ord(m.group(0)):04x}", quoted)


def check_spec(spec: EntrySpec) -> None:
    """Usage-level checks (UsageError): empty values, unknown scenario types, bad slug."""
    check_slug(spec.repo)
    if not spec.config_keys:
        raise UsageError("at least one --config-key is required",
                         hint="e.g. ixtool changelog add -k dsr1-fp8-b200-sglang -d 'what changed'")
    if not spec.descriptions:
        raise UsageError("at least one --description is required",
                         hint="add -d 'what changed' (repeatable, one line each)")
    for k in spec.config_keys:
        if not k.strip() or k != k.strip() or "\n" in k:
            raise UsageError(f"invalid config key {k!r}",
                             hint="a key is one word such as dsr1-fp8-b200-sglang")
    for d in spec.descriptions:
        if not d.strip():
            raise UsageError("a --description may not be empty",
                             hint="write what changed, e.g. -d 'bump sglang to 0.5.3'")
    for s in spec.scenario_types:
        if s not in SCENARIO_TYPES:
            raise UsageError(f"unknown scenario type {s!r}",
                             hint=f"use one of: {', '.join(SCENARIO_TYPES)}")
    if len(set(spec.scenario_types)) != len(spec.scenario_types):
        raise UsageError("a --scenario-type was given twice",
                         hint="give each scenario type once")
    if spec.pr is not None and spec.pr < 1:
        raise UsageError(f"invalid PR number {spec.pr}",
                         hint="give the number as GitHub shows it, e.g. --pr 1234")


def render_entry(spec: EntrySpec) -> bytes:
    """The entry block, ending with exactly one newline."""
    lines = ["- config-keys:"]
    lines += [f"    - {_scalar_key(k)}" for k in spec.config_keys]
    if spec.scenario_types:
        lines.append("  scenario-type:")
        lines += [f"    - {s}" for s in spec.scenario_types]
    lines.append("  description:")
    lines += [f"    - {_scalar_text(d)}" for d in spec.descriptions]
    lines.append(f"  pr-link: {spec.link}")
    return ("\n".join(lines) + "\n").encode("utf-8")


def key_findings(spec: EntrySpec, master_keys: list[str], label: str) -> list[Finding]:
    """One error per config key (or glob) that names no master config."""
    import difflib

    out: list[Finding] = []
    for r in resolve_items(spec.config_keys, master_keys):
        if r.matches:
            continue
        if r.is_glob:
            out.append(GLOB_EMPTY.at(label, None, None,
                                       f"pattern {r.item!r} matches no key of the master configs"))
        else:
            close = difflib.get_close_matches(r.item, master_keys, n=1)
            out.append(KEY_UNKNOWN.at(
                label, None, None, f"config key {r.item!r} is not defined in the master configs",
                hint=f"did you mean {close[0]!r}?" if close else None))
    return out


def append_entry(raw: bytes, spec: EntrySpec, *, master_keys: list[str], label: str
                 ) -> AddOutcome:
    """``raw`` + one empty line + the new entry, or a refusal with findings.

    ``raw`` is the current file (``b""`` when it does not exist yet).  The result is
    checked with the strict gate against ``raw`` (PR mode), so it always appends
    cleanly; problems of the existing file itself are reported, not repaired.
    """
    check_spec(spec)
    entry = render_entry(spec)
    findings = key_findings(spec, master_keys, label)
    if findings:
        return AddOutcome(None, entry, findings, "refused: unknown config keys")
    if raw and not raw.endswith(b"\n"):
        return AddOutcome(None, entry, [FINAL_NEWLINE.at(
            label, raw.count(b"\n") + 1, None,
            "the file does not end with a newline; appending would change its last line",
            hint="add the missing newline in a separate change, then run add again")],
            "refused: the file does not end with a newline")
    sep = b"" if not raw or raw.endswith(b"\n\n") else b"\n"
    data = raw + sep + entry
    # The link is this PR's URL or the placeholder, which PR mode accepts for any PR.
    opts = Options(repo=spec.repo, pr=spec.pr if spec.pr is not None else 1,
                   master_keys=master_keys)
    a = analyze_change(raw, data, label, opts, base_label=f"{label}@before")
    errors = [f for f in a.findings if f.severity is Severity.ERROR]
    if errors:
        return AddOutcome(None, entry, errors, "refused: the result would not validate")
    last = a.head.entries[-1].mapping if a.head.entries else {}
    if (last.get("config-keys") != spec.config_keys
            or last.get("description") != spec.descriptions):
        raise UsageError("internal error: the rendered entry does not read back as written "
                         f"({last!r})",
                         hint="this is a bug; re-run with --traceback and report it")
    n = len(a.head.entries)
    return AddOutcome(data, entry, [f for f in a.findings if f.severity is not Severity.ERROR],
                      f"appended entry {n} ({', '.join(spec.config_keys)}) with pr-link "
                      f"{spec.link}")
