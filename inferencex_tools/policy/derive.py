"""The golden-AL registry derived from what the repository holds (no registry.yaml).

Pure: curve files, the curves' README, the master configs' model prefixes and the
recipe texts in; registry rows, findings and the YAML text of the derived registry out.

Per curve file ``<prefix>_<method>[_<variant>].yaml`` (G-13):

* model key: the file's top-level key;
* model prefix: the longest ``model-prefix`` of the master configs that starts the
  file name (else its first ``_`` field);
* method: the header's ``Measured on … (GPU, vLLM <METHOD>…)`` or
  ``speculative-config: method=…``, else the file-name field after the prefix;
* draft: the header's ``draft: <id>``; draft sampling: ``draft_sample_method=…``;
* curves that still share model, method, draft and sampling (MiniMax-M3 EAGLE3 and
  EAGLE3-GQA: neither header names its draft) are told apart by their file-name
  variant, the README's method column and the draft ids the recipes launch: the
  variant ``gqa`` takes the one draft id whose name has ``gqa``, the plain curve the one
  without.  What stays ambiguous is a finding (PO108), never a guess;
* a curve whose header names no draft and that is the only curve of its model, method
  and sampling accepts any draft (``draft-any``); a native MTP head has no draft.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field

from inferencex_tools.policy.curves import Curve, Registry, RegistryEntry, parse_curve
from inferencex_tools.policy.rules import REGISTRY_AMBIGUOUS
from inferencex_tools.report.findings import Finding

METHODS = {"mtp": "mtp", "nextn": "mtp", "eagle": "eagle", "eagle3": "eagle3",
           "dspark": "dspark"}
_MEASURED = re.compile(r"Measured on\s+(\S+)\s*\(([^)]*)\)")
_HF_ID = re.compile(r"(?<![\w./-])([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?![\w/])")


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


@dataclass
class CurveFacts:
    file: str
    curve: Curve
    prefix: str
    method: str | None
    draft: str | None
    sample: str | None
    variant: tuple[str, ...]
    readme_method: str | None = None


@dataclass
class Derived:
    registry: Registry
    findings: list[Finding] = field(default_factory=list)
    facts: list[CurveFacts] = field(default_factory=list)
    ambiguous: dict[tuple[str, str, str | None], list[str]] = field(default_factory=dict)

    def to_yaml(self) -> str:
        """The derived registry as a registry.yaml text (for ``ixtool policy init``)."""
        lines = [
            "# Golden-AL registry derived by `ixtool policy init` from the curve files, their",
            "# headers, golden_al_distribution/README.md and the draft ids the recipes launch.",
            "# Review it, then commit it: an explicit registry wins over derivation.",
            "# Schema: ixtool schemas/golden-al.schema.json ($defs/registry).",
            f"version: {self.registry.version}", "", "entries:",
        ]
        for e in self.registry.entries:
            lines.append(f"  - id: {e.id}")
            lines.append(f"    model-prefix: {_y(e.model_prefix)}")
            lines.append(f"    method: {e.method}")
            lines.append(f"    draft: {_y(e.draft) if e.draft else 'null'}")
            if e.draft_any:
                lines.append("    draft-any: true")
            if e.draft_aliases:
                lines.append("    draft-aliases: [" + ", ".join(_y(a) for a in e.draft_aliases)
                             + "]")
            if e.draft_sample_method:
                lines.append(f"    draft-sample-method: {_y(e.draft_sample_method)}")
            lines.append(f"    curve: {e.curve}")
            lines.append(f"    model-key: {_y(e.model_key)}")
        lines += ["", "# Thinking default of each model's own chat template (on | off | unknown):",
                  "# the repository does not say; fill in what you know.", "models: {}", "",
                  "# Sanctioned synthetic acceptance outside agentic-coding (G-02).",
                  "synthetic-exceptions: []", ""]
        return "\n".join(lines)


def _y(s: str | None) -> str:
    if s is None:
        return "null"
    if re.fullmatch(r"[A-Za-z0-9][\w./-]*", s) and s.lower() not in ("null", "true", "false",
                                                                     "yes", "no", "on", "off"):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _readme_methods(readme: str | None) -> dict[str, str]:
    """curve file → the README table's method cell."""
    out: dict[str, str] = {}
    for line in (readme or "").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3:
            m = re.search(r"([\w.-]+\.yaml)", cells[2])
            if m:
                out[m.group(1)] = cells[1]
    return out


def _header_facts(header: Iterable[str]) -> tuple[str | None, str | None, str | None]:
    """(method, draft, draft sampling method) a curve's comment header states."""
    method = draft = sample = None
    for h in header:
        m = _MEASURED.search(h)
        for p in [p.strip() for p in m.group(2).split(",")] if m else []:
            mm = re.match(r"(?:vLLM|SGLang|TRT-LLM|ATOM)\s+(\S+)$", p, re.IGNORECASE)
            if mm and mm.group(1).lower() in METHODS:
                method = METHODS[mm.group(1).lower()]
            md = re.match(r"draft:\s*(\S+)$", p)
            if md:
                draft = md.group(1)
        if h.lower().startswith("speculative-config:"):
            ms = re.search(r"\bmethod=([\w-]+)", h.replace("draft_sample_method", "")
                           .replace("rejection_sample_method", ""))
            if ms and ms.group(1).lower() in METHODS:
                method = METHODS[ms.group(1).lower()]
            ss = re.search(r"draft_sample_method=([\w-]+)", h)
            if ss:
                sample = ss.group(1)
    return method, draft, sample


def _model_prefix(stem: str, prefixes: Container[str]) -> str:
    """The longest model prefix that is the stem or starts it before a ``_``/``-``."""
    cuts = [i for i, c in enumerate(stem) if c in "_-" and i] + [len(stem)]
    return next((stem[:i] for i in reversed(cuts) if stem[:i] in prefixes),
                stem.split("_")[0])


def _facts(name: str, curve: Curve, prefixes: Container[str],
           readme: Mapping[str, str]) -> CurveFacts:
    stem = name[:-5] if name.endswith(".yaml") else name
    prefix = _model_prefix(stem, prefixes)
    rest = [t for t in re.split(r"[_-]+", stem[len(prefix):]) if t]
    method, draft, sample = _header_facts(curve.header)
    if method is None:
        method = next((METHODS[t.lower()] for t in rest if t.lower() in METHODS), None)
    variant = tuple(t.lower() for t in rest if t.lower() not in METHODS)
    return CurveFacts(name, curve, prefix, method, draft, sample, variant, readme.get(name))


_FILE_EXT = re.compile(r"\.(ya?ml|json|sh|py|md|txt|log|jinja|sqsh|tar|gz)$", re.IGNORECASE)


def _draft_ids(texts: Iterable[str]) -> set[str]:
    """Model-id-looking words (``owner/name``) of the recipes, without file paths."""
    ids: set[str] = set()
    for t in texts:
        for m in _HF_ID.finditer(t):
            i = m.group(1).rstrip(".")
            if not _FILE_EXT.search(i):
                ids.add(i)
    return ids


def derive_registry(curves: Mapping[str, bytes], *, readme: str | None,
                    prefixes: Container[str], recipe_texts: Iterable[str],
                    registry_file: str) -> Derived:
    """Registry rows for ``curves`` (file name → bytes).  ``prefixes``: the master
    configs' model prefixes (a set, or a lookup that parses only what it needs)."""
    ps = frozenset(prefixes) if isinstance(prefixes, list | tuple) else prefixes
    rm = _readme_methods(readme)
    out = Derived(Registry(registry_file, 1, []))
    for name in sorted(curves):
        curve, found = parse_curve(curves[name], name)
        out.findings.extend(found)
        if curve is None:
            continue
        out.facts.append(_facts(name, curve, ps, rm))
    ids = _draft_ids(recipe_texts)
    cells: dict[tuple[str, str, str | None, str | None], list[CurveFacts]] = {}
    for f in out.facts:
        if f.method is None:
            out.findings.append(REGISTRY_AMBIGUOUS.at(
                f.file, 1, 1, f"{f.file}: no drafting method in the header or the file name; "
                "not used (write the registry row by hand)"))
            continue
        cells.setdefault((f.prefix, f.method, f.draft, f.sample), []).append(f)
    for (prefix, method, draft, sample), group in cells.items():
        if len(group) > 1 and draft is None:
            _split_by_draft(group, ids, out)
        if len(group) > 1 and len({g.draft for g in group}) < len(group):
            files = [g.file for g in group]
            out.ambiguous[(prefix, method, sample)] = files
            out.findings.append(REGISTRY_AMBIGUOUS.at(
                group[0].file, 1, 1,
                f"{', '.join(files)} all cover {prefix} / {method} / sampling "
                f"{sample or 'default'} and nothing in the repository tells their drafts "
                "apart; rows with this draft are not checked against either (write the "
                "registry with `ixtool policy init` and name each draft)"))
            continue
        alone = len(group) == 1
        for g in group:
            out.registry.entries.append(RegistryEntry(
                id=g.file[:-5].replace("_", "-").lower(), model_prefix=g.prefix,
                method=method, draft=g.draft, curve=g.file, model_key=g.curve.model_key,
                draft_sample_method=g.sample,
                draft_any=alone and g.draft is None and method != "mtp"))
    return out


def _split_by_draft(group: list[CurveFacts], ids: set[str], out: Derived) -> None:
    """Give each curve of ``group`` the one launched draft id its variant names."""
    key = _norm(group[0].curve.model_key)
    method = group[0].method or ""
    cands = sorted(i for i in ids if method in _norm(i) and
                   (key in _norm(i) or _norm(group[0].prefix) in _norm(i)))
    variants = {v for g in group for v in g.variant}
    picked: dict[str, str] = {}
    for g in group:
        own = set(g.variant)
        fit = [i for i in cands if all(v in _norm(i) for v in own)
               and not any(v in _norm(i) for v in variants - own)]
        if len(fit) == 1:
            picked[g.file] = fit[0]
    if len(set(picked.values())) == len(group):
        for g in group:
            g.draft = picked[g.file]
