"""Golden-AL curve files and the registry that maps a launch to one of them.

Pure functions: bytes in, :class:`Curve` / :class:`Registry` plus findings out.
Reading files from disk is done by :mod:`inferencex_tools.policy.store`.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.errors import YamlError
from inferencex_tools.io.yamlio import load_safe
from inferencex_tools.policy.rules import (
    CURVE_HEADER,
    CURVE_SCHEMA,
    CURVE_VALUE,
    CURVE_YAML,
    REGISTRY_CONFLICT,
    REGISTRY_INVALID,
)
from inferencex_tools.report.findings import Finding

MODES = ("thinking_on", "thinking_off")
TOLERANCE = 0.005
RUN_URL = re.compile(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/actions/runs/\d+")


@dataclass(frozen=True)
class Curve:
    """One curve file: ``modes[mode][K] = AL``."""

    file: str
    model_key: str
    modes: dict[str, dict[int, float]]
    source_run: str | None
    header: tuple[str, ...] = ()

    def value(self, mode: str, k: int) -> float | None:
        return self.modes.get(mode, {}).get(k)


def _header(text: str) -> tuple[list[str], int]:
    """Leading comment lines (without '#') and the 1-based line of the first data line."""
    out: list[str] = []
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("#"):
            out.append(s.lstrip("#").strip())
        elif s:
            return out, i
    return out, len(out) + 1


def _data_line(text: str, needle: str) -> int | None:
    for i, line in enumerate(text.splitlines(), 1):
        if not line.lstrip().startswith("#") and needle in line:
            return i
    return None


def parse_curve(data: bytes, file: str) -> tuple[Curve | None, list[Finding]]:
    """Load and validate one curve file (schema, header URL, value ranges)."""
    from inferencex_tools.schemas import schema_issues

    findings: list[Finding] = []
    text = data.decode("utf-8", errors="replace")
    try:
        doc = load_safe(data, source=file)
    except YamlError as exc:
        return None, [CURVE_YAML.at(file, exc.line, exc.column, exc.detail)]
    header, first_data = _header(text)
    url = next((m.group(0) for h in header if (m := RUN_URL.search(h))), None)
    if url is None:
        findings.append(CURVE_HEADER.at(
            file, 1, 1, "no 'https://github.com/…/actions/runs/<id>' URL in the leading comments"))
    as_json = _jsonable(doc)
    issues = schema_issues("golden-al", as_json)
    if issues:
        for err in issues[:10]:
            path = "/".join(str(p) for p in err.path)
            line = _data_line(text, str(err.path[-1])) if err.path else first_data
            findings.append(CURVE_SCHEMA.at(file, line, 1, f"{path or '<root>'}: {err.detail}"))
        return None, findings
    assert isinstance(doc, dict)
    model_key = next(iter(doc))
    modes: dict[str, dict[int, float]] = {}
    for mode, table in doc[model_key].items():
        cells: dict[int, float] = {}
        for k, al in table.items():
            kk, v = int(k), float(al)
            cells[kk] = v
            line = _data_line(text, f"{k}:")
            if not 1.0 <= v <= kk + 1 + 1e-9:
                findings.append(CURVE_VALUE.at(
                    file, line, 1, f"{model_key}.{mode}[{kk}] = {v} is outside [1, {kk + 1}]"))
            elif abs(round(v, 2) - v) > 1e-9:
                findings.append(CURVE_VALUE.at(
                    file, line, 1, f"{model_key}.{mode}[{kk}] = {v} has more than two decimals"))
        modes[mode] = dict(sorted(cells.items()))
    return Curve(file, model_key, modes, url, tuple(header)), findings


def _jsonable(doc: Any) -> Any:
    """Mapping keys as strings (what the JSON Schema sees), for int keys from YAML."""
    if isinstance(doc, dict):
        return {str(k): _jsonable(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_jsonable(v) for v in doc]
    return doc


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class RegistryEntry:
    id: str
    model_prefix: str
    method: str
    draft: str | None
    curve: str
    model_key: str
    draft_aliases: tuple[str, ...] = ()
    draft_sample_method: str | None = None
    line: int | None = None
    draft_any: bool = False

    def matches_draft(self, draft: str | None) -> bool:
        if self.draft_any:
            return True
        if self.draft is None or draft is None:
            return self.draft is None and draft is None
        want = {norm_draft(d) for d in (self.draft, *self.draft_aliases)}
        return norm_draft(draft) in want

    def label(self) -> str:
        return f"registry row '{self.id}' ({self.curve}:{self.model_key})"


@dataclass
class Registry:
    file: str
    version: int
    entries: list[RegistryEntry]
    models: dict[str, str] = field(default_factory=dict)  # prefix -> on|off|unknown
    exceptions: list[tuple[str, str]] = field(default_factory=list)  # (glob, reason)
    derived: bool = False  # built from the curve files (no registry.yaml)
    # (prefix, method, sampling) -> curve files a derivation could not tell apart
    ambiguous: dict[tuple[str, str, str | None], list[str]] = field(default_factory=dict)

    def for_prefix(self, prefix: str) -> list[RegistryEntry]:
        return [e for e in self.entries if e.model_prefix == prefix]

    def match(
        self, prefix: str, method: str | None, draft: str | None, sample: str | None
    ) -> RegistryEntry | None:
        for e in self.for_prefix(prefix):
            if e.method != method or not e.matches_draft(draft):
                continue
            if (e.draft_sample_method or None) == (sample or None):
                return e
        return None

    def exception_for(self, config_key: str) -> str | None:
        for glob, reason in self.exceptions:
            if fnmatch.fnmatchcase(config_key, glob):
                return reason
        return None

    def template_default(self, prefix: str) -> str:
        return self.models.get(prefix, "unknown")


def norm_draft(draft: str) -> str:
    """Compare drafts by their last path component, case-insensitively.

    ``/data/models/MiniMax-M3-EAGLE3-GQA`` and ``Inferact/MiniMax-M3-EAGLE3-GQA`` are the
    same checkpoint; ``…-EAGLE3`` and ``…-EAGLE3-GQA`` are not.
    """
    return draft.rstrip("/").rsplit("/", 1)[-1].lower()


def parse_registry(data: bytes, file: str) -> tuple[Registry | None, list[Finding]]:
    from inferencex_tools.schemas import schema_issues

    text = data.decode("utf-8", errors="replace")
    try:
        doc = load_safe(data, source=file)
    except YamlError as exc:
        return None, [REGISTRY_INVALID.at(file, exc.line, exc.column, exc.detail)]
    issues = schema_issues("golden-al", doc, definition="registry")
    if issues:
        return None, [
            REGISTRY_INVALID.at(
                file, None, None,
                f"{'/'.join(str(p) for p in e.path) or '<root>'}: {e.detail}")
            for e in issues[:10]
        ]
    findings: list[Finding] = []
    entries: list[RegistryEntry] = []
    seen_ids: set[str] = set()
    cells: dict[tuple[str, str, str | None, str | None], str] = {}
    for raw in doc["entries"]:
        line = _data_line(text, f"id: {raw['id']}")
        e = RegistryEntry(
            id=raw["id"], model_prefix=raw["model-prefix"], method=raw["method"],
            draft=raw["draft"], curve=raw["curve"], model_key=raw["model-key"],
            draft_aliases=tuple(raw.get("draft-aliases", ())),
            draft_sample_method=raw.get("draft-sample-method"), line=line,
            draft_any=bool(raw.get("draft-any", False)),
        )
        if e.id in seen_ids:
            findings.append(REGISTRY_INVALID.at(file, line, 1, f"row id '{e.id}' repeated"))
        seen_ids.add(e.id)
        cell = (e.model_prefix, e.method, norm_draft(e.draft) if e.draft else None,
                e.draft_sample_method)
        if cell in cells:
            findings.append(REGISTRY_CONFLICT.at(
                file, line, 1, f"rows '{cells[cell]}' and '{e.id}' cover the same cell "
                f"{cell[:3]} (sampling {cell[3] or 'default'})"))
        cells.setdefault(cell, e.id)
        entries.append(e)
    models = {k: v["template-thinking"] for k, v in (doc.get("models") or {}).items()}
    exceptions = [(x["config-key"], x["reason"]) for x in doc.get("synthetic-exceptions") or []]
    return Registry(file, doc["version"], entries, models, exceptions), findings
