"""``ixtool config validate``, pure: master configs + runners bytes → findings.

Structure comes from ``schemas/master-config.schema.json`` /
``schemas/runners.schema.json`` (strictly typed); cross-field rules from
:mod:`inferencex_tools.sweep.checks` (strict mode); cross-file references here:
runner labels and hardware in runners.yaml, the benchmark script every
single-node row launches and the recipe every multinode row copies.

Line numbers come from a round-trip load, done only when a file has findings.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.errors import LimitExceeded, YamlError
from inferencex_tools.io.yamlio import load_safe
from inferencex_tools.report.findings import Finding, Result, Rule, Severity
from inferencex_tools.safetext import (
    CONTROL,
    code_points,
    invisible_chars,
    is_invisible,
    shown,
)
from inferencex_tools.schemas import SchemaIssue
from inferencex_tools.sweep.checks import Issue, check_configs, where
from inferencex_tools.sweep.contract import describe
from inferencex_tools.sweep.recipes import (
    Clone,
    RecipeSources,
    learn,
    lookup,
    matching,
    one_per_source,
)
from inferencex_tools.sweep.rules import (
    DRAM_BUDGET,
    DUP_ACROSS,
    ENUM,
    GLOB_CHAR_KEY,
    IMAGE_VERSION,
    INVISIBLE_KEY,
    INVISIBLE_TEXT,
    LAUNCHER,
    NO_SCRIPTS_DIR,
    NON_ASCII_KEY,
    NOT_MAPPING,
    RANGE,
    RECIPE,
    RECIPE_EXTERNAL,
    REQUIRED,
    RUNNER_HARDWARE,
    RUNNER_LABEL,
    RUNNERS,
    RUNNERS_YAML,
    SCHEMA,
    SCRIPT,
    TYPE,
    UNKNOWN_KEY,
    UNSAFE_NAME,
    WILDCARD_KEY,
    YAML,
)

_SCHEMA_RULES = {
    "additionalProperties": UNKNOWN_KEY,
    "required": REQUIRED,
    "type": TYPE,
    "minimum": RANGE,
    "exclusiveMinimum": RANGE,
    "maximum": RANGE,
    "minLength": RANGE,
    "minItems": RANGE,
    "enum": ENUM,
    "const": ENUM,
    "propertyNames": WILDCARD_KEY,
}


@dataclass
class MasterFile:
    label: str
    raw: bytes


@dataclass
class ValidateInput:
    masters: list[MasterFile]
    runners: MasterFile | None = None
    # path → exists? for benchmark scripts/recipes; None: the scripts dir is not present
    exists: Callable[[str], bool] | None = None
    base_keys: set[str] | None = None  # keys at the base ref (PR mode): new keys are stricter
    # shell scripts (runners/*.sh, benchmarks/multi_node/**/*.sh: path → text): where the
    # launchers take multinode recipes from (sweep/recipes.py); None: not known
    scripts: dict[str, str] | None = None
    # False: findings without line and column (what the base has is matched without its
    # lines, so nothing is spent finding them)
    positions: bool = True
    # scenario → folder of its single-node scripts in the tree judged (script_dirs);
    # None: today's layout
    script_dirs: dict[str, str] | None = None


@dataclass
class _File:
    label: str
    raw: bytes
    data: Any = None
    rt: Any = None
    rt_loaded: bool = False
    findings: list[Finding] = field(default_factory=list)
    positions: bool = True
    blocks: dict[str, Any] | None = None  # top-level key → sweep.blocks.Block
    block_rt: dict[str, Any] = field(default_factory=dict)  # key → its block, round trip
    lines: list[str] | None = None  # the text's lines, split once for line scans
    tops: dict[str, int] | None = None  # the text before a line's first colon → 1st line
    master: bool = False  # a master config: its entries' findings carry a contract class

    def _scan(self, path: tuple[Any, ...]) -> tuple[int | None, int | None]:
        """Fast path for a path of mapping keys in block style (``(key,)``, ``(key,
        field)``, ``(key, "scenarios", name)`` …): a line scan, each key looked for at
        the indentation of the first line under its parent; (None, None) when a part is
        a list index or not found that way (flow style, a sequence): the caller loads."""
        if not all(isinstance(p, str) for p in path[1:]):
            return (None, None)
        lines = self._lines()
        start = self._top(str(path[0]))
        if start is None:
            return (None, None)
        at, parent = (start + 1, 1), 0  # a top-level line (indent 0) ends the block
        for part in path[1:]:
            found, indent = None, None
            for j in range(at[0], len(lines)):
                ln = lines[j]
                body = ln.lstrip(" ")
                if not body.strip() or body.startswith("#"):
                    continue
                cur = len(ln) - len(body)
                if cur <= parent:
                    break  # the parent's block ended
                if indent is None:
                    indent = cur
                if cur == indent and re.match(re.escape(part) + r":(\s|$)", body):
                    found = j
                    break
            if found is None or indent is None:
                return (None, None)
            at, parent = (found + 1, indent + 1), indent
        return at

    def _lines(self) -> list[str]:
        if self.lines is None:
            self.lines = self.raw.decode("utf-8", "replace").split("\n")
        return self.lines

    def _top(self, key: str) -> int | None:
        """The first line that starts ``key:`` (plain or quoted)."""
        forms = (key, f"'{key}'", f'"{key}"')
        lines = self._lines()
        if any(":" in f for f in forms):
            return next((i for i, ln in enumerate(lines)
                         if ln.startswith(tuple(f + ":" for f in forms))), None)
        if self.tops is None:  # the text before each line's first colon: its first line
            self.tops = {}
            for i, ln in enumerate(lines):
                head, colon, _ = ln.partition(":")
                if colon:
                    self.tops.setdefault(head, i)
        found = [self.tops[f] for f in forms if f in self.tops]
        return min(found) if found else None

    def position(self, path: tuple[Any, ...]) -> tuple[int | None, int | None]:
        from inferencex_tools.io.yamlio import load_rt, rt_path_position

        if not self.positions:
            return (None, None)
        if path and not self.rt_loaded:
            pos = self._scan(path)
            if pos[0] is not None:
                return pos
        if path and not self.rt_loaded:
            pos = self._in_block(path)
            if pos[0] is not None:
                return pos
        if not self.rt_loaded:
            self.rt_loaded = True
            try:
                self.rt = load_rt(self.raw, source=self.label)
            except YamlError:
                self.rt = None
        if self.rt is None:
            return (None, None)
        return rt_path_position(self.rt, list(path))

    def _in_block(self, path: tuple[Any, ...]) -> tuple[int | None, int | None]:
        """The position of a deeper path from a round-trip load of only the top-level
        block of ``path[0]`` (a block loads alone as exactly its key: sweep.blocks),
        its lines shifted to the file's: a 7,500-line master config is not loaded whole
        (round trip: ~1 s) for a finding in one block."""
        from inferencex_tools.io.yamlio import load_rt, rt_path_position
        from inferencex_tools.sweep.blocks import split

        if self.blocks is None:
            self.blocks = {b.key: b for b in split(self.raw.decode("utf-8", "replace")) or []}
        block = self.blocks.get(str(path[0]))
        if block is None:
            return (None, None)
        if block.key not in self.block_rt:
            try:
                self.block_rt[block.key] = load_rt(block.text.encode(), source=self.label)
            except YamlError:
                self.block_rt[block.key] = None
        rt = self.block_rt[block.key]
        if rt is None:
            return (None, None)
        line, col = rt_path_position(rt, list(path))
        return (None if line is None else line + block.line - 1, col)

    def add(self, rule: Rule, path: tuple[Any, ...], msg: str, *,
            severity: Severity | None = None, hint: str | None = None) -> None:
        line, col = self.position(path)
        data = (describe(rule.id, path, msg, path[0], vocabulary())
                if self.master and path else None)
        self.findings.append(rule.at(self.label, line, col, msg, severity=severity, hint=hint,
                                     data=data))


def _load(f: _File, rule: Rule) -> bool:
    try:
        f.data = load_safe(f.raw, source=f.label)
        return True
    except (YamlError, LimitExceeded) as exc:
        f.findings.append(rule.at(f.label, exc.line, exc.column, exc.detail))
        return False


def _schema(f: _File, name: str, generic: Rule) -> set[tuple[str, tuple[Any, ...]]]:
    """Schema findings (one per rule and location); returns what was reported."""
    from inferencex_tools.schemas import schema_issues

    bad: set[tuple[str, tuple[Any, ...]]] = set()
    for issue in schema_issues(name, f.data):
        rule, at, msg = _schema_rule(issue, generic)
        if (rule.id, at) in bad:
            continue
        bad.add((rule.id, at))
        f.add(rule, at, f"{where(at) or '(root)'}: {msg}")
    return bad


def _schema_rule(issue: SchemaIssue, generic: Rule) -> tuple[Rule, tuple[Any, ...], str]:
    """(rule, location, message) of one schema issue in a master config / runners file."""
    rule = _SCHEMA_RULES.get(issue.keyword, generic)
    if issue.unknown_key is not None and issue.allowed:
        return rule, issue.at, f"{issue.message} (allowed: {', '.join(sorted(issue.allowed))})"
    if issue.keyword == "not" and issue.path and issue.path[-1] == "version":
        return IMAGE_VERSION, issue.path, f"version {issue.instance!r} is an image reference"
    if issue.keyword == "propertyNames":
        at = (issue.instance,) if isinstance(issue.instance, str) else issue.path
        return rule, at, f"config key {issue.instance!r} contains '*'"
    if issue.keyword == "not" and isinstance(issue.expected, dict) and "pattern" in issue.expected:
        return _unsafe_name(issue)
    return rule, issue.at, issue.message


def _unsafe_name(issue: SchemaIssue) -> tuple[Rule, tuple[Any, ...], str]:
    """A name-shaped value (config key, model-prefix, precision, framework) holding what
    the schema excludes: '*' in a key (SW103), '_' in a model-prefix, else a path
    separator, a control character or a dot-only name (SW106)."""
    from inferencex_tools.schemas import short_repr

    value = issue.instance if isinstance(issue.instance, str) else ""
    if not issue.path:  # propertyNames: a config key
        at: tuple[Any, ...] = (value,)
        what = f"config key {short_repr(value)}"
        if "*" in value:
            return WILDCARD_KEY, at, f"{what} contains '*'"
    else:
        at, what = issue.path, short_repr(value)
        if issue.path[-1] == "model-prefix" and "_" in value:
            return SCHEMA, at, f"{what} contains '_' (the model code ends at the first '_')"
    bad = next((c for c in value if c in "/\\" or CONTROL.match(c)), None)
    why = (f"contains {bad!r}" if bad is not None else "is a dot-only name")
    return UNSAFE_NAME, at, (f"{what} {why}: it becomes part of file, script and job names "
                             "(a path separator or control character could leave its folder "
                             "or break a script line)")


@functools.cache
def vocabulary() -> frozenset[str]:
    """The master-config field names (every property the schema declares)."""
    from inferencex_tools.schemas import load_schema

    names: set[str] = set()
    todo: list[Any] = [load_schema("master-config")]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                names.update(str(k) for k in props)
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return frozenset(names)


def _label_sets(runners: Any) -> tuple[set[str] | None, dict[str, Any]]:
    if not isinstance(runners, dict) or not isinstance(runners.get("labels"), dict):
        return None, {}
    hw = runners.get("hardware")
    return set(runners["labels"]), hw if isinstance(hw, dict) else {}


def _gpu(label: str) -> str:
    return label.removeprefix("cluster:").split("-")[0]


SINGLE_NODE = "benchmarks/single_node/"
# each scenario's folder of single-node scripts (SWEEP.md §7: the template's
# SCENARIO_SUBDIR); before 2026-06-02 fixed-seq-len scripts sat in SINGLE_NODE itself
SCENARIO_DIRS = {"fixed-seq-len": SINGLE_NODE + "fixed_seq_len/",
                 "agentic-coding": SINGLE_NODE + "agentic/"}


def script_dirs(has_folder: Callable[[str], bool]) -> dict[str, str]:
    """The layout of the commit being judged: each scenario's folder of single-node
    scripts — its own subfolder where the tree has one (today's layout; ``has_folder``:
    does the tree hold a file below it), else ``benchmarks/single_node/`` itself (the
    layout before the subfolders)."""
    return {s: d if has_folder(d) else SINGLE_NODE for s, d in SCENARIO_DIRS.items()}


def folders_of(paths: Iterable[str]) -> Callable[[str], bool]:
    """``has_folder`` for :func:`script_dirs` over a tree's file paths."""
    dirs: set[str] = set()
    for p in paths:
        parts = p.split("/")[:-1]
        dirs.update("/".join(parts[:i]) + "/" for i in range(1, len(parts) + 1))
    return dirs.__contains__


def script_candidates(cfg: dict[str, Any], scenario: str, spec: str,
                      dirs: dict[str, str] | None = None) -> list[str]:
    """Benchmark scripts a single-node row may launch (SWEEP.md §7), first existing wins;
    ``dirs``: the scenario folders of the tree (:func:`script_dirs`; today's by default)."""
    folder = (dirs or SCENARIO_DIRS).get(scenario, SCENARIO_DIRS["fixed-seq-len"])
    m, prec, fw = cfg.get("model-prefix"), cfg.get("precision"), cfg.get("framework")
    gpu = _gpu(str(cfg.get("runner", "")))
    s = "_mtp" if spec == "mtp" else ""
    base = f"{folder}{m}_{prec}_{gpu}"
    out = [f"{base}_{fw}{s}.sh"]
    if fw == "trt":
        out.append(f"{base}_trt{s}.sh")
    if fw == "atom":
        out.append(f"{base}_atom{s}.sh")
    out.append(f"{base}{s}.sh")
    return out


_CONFIG_FILE = re.compile(r"^CONFIG_FILE=(.+)$")


def recipe_setting(setting: str) -> str | None:
    """The recipe path of a ``CONFIG_FILE=<path>[:override…]`` setting."""
    m = _CONFIG_FILE.match(setting)
    return m.group(1).split(":", 1)[0] if m else None


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


@dataclass
class _Refs:
    """What cross-file references are checked against."""

    exists: Callable[[str], bool] | None
    labels: set[str] | None
    hardware: dict[str, Any]
    base_keys: set[str] | None
    sources: RecipeSources | None = None
    launchers: dict[str, list[str]] = field(default_factory=dict)  # runner label → scripts
    script_dirs: dict[str, str] | None = None  # scenario → folder of single-node scripts

    def launchers_of(self, runner: str) -> list[str]:
        """The launch scripts a runner label's nodes run (every launcher when unknown)."""
        if runner in self.launchers:
            return self.launchers[runner]
        guess = f"runners/launch_{runner.removeprefix('cluster:')}.sh"
        if self.sources is not None and guess in self.sources.clones:
            return [guess]
        return sorted(self.sources.clones) if self.sources is not None else []


def _references(f: _File, data: dict[str, Any], refs: _Refs) -> None:
    warned_hw: set[str] = set()
    for key, cfg in data.items():
        if not isinstance(cfg, dict):
            continue
        scen = cfg.get("scenarios") if isinstance(cfg.get("scenarios"), dict) else {}
        assert isinstance(scen, dict)
        runner = cfg.get("runner")
        if refs.labels is not None and isinstance(runner, str):
            new = refs.base_keys is not None and key not in refs.base_keys
            _runner_refs(f, key, runner, scen, refs.labels, refs.hardware, warned_hw, new=new)
        if refs.exists is not None:
            _scripts(f, key, cfg, scen, refs)


def _runner_refs(f: _File, key: str, runner: str, scen: dict[str, Any], labels: set[str],
                 hardware: dict[str, Any], warned_hw: set[str], *, new: bool) -> None:
    """The config's runner label in runners.yaml, and the hardware its agentic scenarios
    need (a missing hardware entry is reported once per label)."""
    if runner not in labels:
        f.add(RUNNER_LABEL, (key, "runner"),
              f"{key}: runner label {runner!r} is not defined in runners.yaml labels",
              severity=Severity.ERROR if new else Severity.WARNING)
    agentic = _list(scen.get("agentic-coding"))
    uses_dram = any(
        isinstance(e, dict) and e.get("kv-offloading") == "dram"
        for it in agentic if isinstance(it, dict)
        for e in _list(it.get("search-space")))
    if (runner in labels and agentic and runner not in hardware
            and runner not in warned_hw and not uses_dram):
        warned_hw.add(runner)
        f.add(RUNNER_HARDWARE, (key, "runner"),
              f"{key}: agentic config on {runner!r}, which has no hardware entry in "
              "runners.yaml (DRAM KV offload cannot be sized)")
    if uses_dram:
        hw = hardware.get(runner)
        missing = [k for k in ("available-cpu-dram-mib", "gpus-per-node")
                   if not isinstance(hw, dict) or k not in hw]
        if missing:
            f.add(DRAM_BUDGET, (key, "runner"),
                  f"{key}: kv-offloading dram needs hardware.{runner}."
                  f"{' and '.join(missing)} in runners.yaml")


def _scripts(f: _File, key: str, cfg: dict[str, Any], scen: dict[str, Any],
             refs: _Refs) -> None:
    """The benchmark script of every single-node entry, the recipe of every multinode
    worker (each missing path reported once per scenario)."""
    exists = refs.exists
    assert exists is not None
    multinode = cfg.get("multinode") is True
    external: dict[str, tuple[tuple[Any, ...], list[str]]] = {}
    row_clones: dict[str, list[Clone]] = {}
    for sname in ("fixed-seq-len", "agentic-coding"):
        seen: set[str] = set()
        for path, e in _search_space(key, sname, scen.get(sname)):
            if multinode:
                if sname not in row_clones:
                    row_clones[sname] = _row_clones(cfg, sname, refs)
                _recipes(f, key, path, e, refs, seen, external.setdefault(
                    sname, (path, []))[1], row_clones[sname])
                continue
            cands = script_candidates(cfg, sname, str(e.get("spec-decoding", "none")),
                                      refs.script_dirs)
            if cands[0] in seen:
                continue
            seen.add(cands[0])
            if not any(exists(c) for c in cands):
                f.add(SCRIPT, path,
                      f"{key}: no benchmark script for this {sname} entry; tried "
                      + ", ".join(cands))
    for sname, (path, recipes) in external.items():
        if recipes:
            _external_note(f, key, cfg, sname, path, recipes, refs, row_clones[sname])


def _search_space(key: str, sname: str, items: Any
                  ) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """(path, entry) of every mapping entry under a scenario's items."""
    out: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    for i, it in enumerate(_list(items)):
        if not isinstance(it, dict) or not isinstance(it.get("search-space"), list):
            continue
        for j, e in enumerate(it["search-space"]):
            if isinstance(e, dict):
                out.append(((key, "scenarios", sname, i, "search-space", j), e))
    return out


def _recipes(f: _File, key: str, path: tuple[Any, ...], e: dict[str, Any], refs: _Refs,
             seen: set[str], external: list[str], clones: list[Clone]) -> None:
    """Each worker's CONFIG_FILE recipe: vendored (must exist), or only in an external
    checkout the launcher clones (collected for one note per key and scenario).
    ``clones``: the launchers' clones that apply to the row (:func:`_row_clones`)."""
    assert refs.exists is not None
    sources = refs.sources if refs.sources is not None else RecipeSources()
    for w in ("prefill", "decode"):
        wk = e.get(w)
        sets = wk.get("additional-settings") if isinstance(wk, dict) else None
        for k, s in enumerate(_list(sets)):
            rp = recipe_setting(str(s))
            if not rp or rp in seen:
                continue
            seen.add(rp)
            look = lookup(rp, sources, refs.exists, clones)
            if look.status == "external":
                external.append(rp)
            elif look.status != "found":
                where_ = ("the vendored copy the launchers overlay" if look.status == "missing"
                          else "the repository")
                f.add(RECIPE, (*path, w, "additional-settings", k),
                      f"{key}: CONFIG_FILE recipe {rp} is not in {where_}; tried "
                      + ", ".join(look.tried))


_KNOWN_VARS = (("MODEL_PREFIX", "model-prefix"), ("FRAMEWORK", "framework"),
               ("PRECISION", "precision"))


def _row_clones(cfg: dict[str, Any], sname: str, refs: _Refs) -> list[Clone]:
    """The clones of the config's launchers whose if/elif guards agree with the row
    (its model prefix, framework, precision and scenario), every one of them."""
    scripts = refs.launchers_of(str(cfg.get("runner", "")))
    sources = refs.sources if refs.sources is not None else RecipeSources()
    known = {var: str(cfg[k]) for var, k in _KNOWN_VARS if k in cfg}
    known["IS_AGENTIC"] = "1" if sname == "agentic-coding" else "0"
    known["IS_MULTINODE"] = "true"
    return matching(sources.launcher_clones(scripts), known)


def _external_note(f: _File, key: str, cfg: dict[str, Any], sname: str,
                   path: tuple[Any, ...], recipes: list[str], refs: _Refs,
                   clones: list[Clone]) -> None:
    """One note per key and scenario: its recipes come from an external checkout."""
    scripts = refs.launchers_of(str(cfg.get("runner", "")))
    clones = one_per_source(clones)
    if clones:
        names = "; ".join(f"{c.describe()} (cloned by {c.script}:{c.line})" for c in clones)
    else:
        names = "a repository cloned by " + (", ".join(scripts) or "the launchers")
    n = len(recipes)
    f.add(RECIPE_EXTERNAL, path[:3],
          f"{key}: {n} {sname} recipe{'s' if n != 1 else ''} (e.g. {recipes[0]}) "
          f"not vendored in this repository; read at run time from {names}")


def _label_launchers(runners: dict[str, Any]) -> dict[str, list[str]]:
    """runners.yaml label → the launch scripts of its nodes' families."""
    out: dict[str, list[str]] = {}
    for label, nodes in runners["labels"].items():
        fams = dict.fromkeys(str(n).split("_", 1)[0] for n in _list(nodes))
        out[str(label)] = [f"runners/launch_{fam}.sh" for fam in fams]
    return out


def _launchers(rf: _File, labels: dict[str, Any], exists: Callable[[str], bool]) -> None:
    """Every node family (node name up to its first '_') needs runners/launch_<family>.sh."""
    reported: set[str] = set()
    for label, nodes in labels.items():
        for node in _list(nodes):
            fam = str(node).split("_", 1)[0]
            if fam in reported:
                continue
            reported.add(fam)
            path = f"runners/launch_{fam}.sh"
            if not exists(path):
                rf.add(LAUNCHER, ("labels", label),
                       f"labels.{label}: node {node!r} would run {path}, which does not exist")


def validate(inp: ValidateInput) -> Result:
    result = Result(command="config validate")
    files: list[_File] = []
    merged: dict[str, tuple[_File, Any]] = {}
    runners_data: Any = None
    rf: _File | None = None
    if inp.runners is not None:
        rf = _File(inp.runners.label, inp.runners.raw, positions=inp.positions)
        files.append(rf)
        result.checked.append(rf.label)
        _invisible_text(rf, set())
        if _load(rf, RUNNERS_YAML):
            runners_data = rf.data
            _schema(rf, "runners", RUNNERS)
    labels, hardware = _label_sets(runners_data)
    if labels is not None and inp.exists is not None and rf is not None:
        _launchers(rf, runners_data["labels"], inp.exists)
    refs = _Refs(inp.exists, labels, hardware, inp.base_keys,
                 learn(inp.scripts) if inp.scripts is not None else None,
                 _label_launchers(runners_data) if labels is not None else {},
                 inp.script_dirs)
    for mf in inp.masters:
        f = _File(mf.label, mf.raw, positions=inp.positions, master=True)
        files.append(f)
        result.checked.append(f.label)
        if _load(f, YAML) and _is_mapping(f):
            _master(f, merged, refs)
        _invisible_text(f, {k for k in f.data if isinstance(k, str) and invisible_chars(k)}
                        if isinstance(f.data, dict) else set())
    _coverage_notes(inp, result)
    sources: dict[str, str] = {}
    for f in files:
        result.extend(f.findings)
        if f.findings:
            sources[f.label] = f.raw.decode("utf-8", "replace")
    result.info["sources"] = sources
    result.info["config_keys"] = len(merged)
    return result


def _invisible_text(f: _File, keys: set[str]) -> None:
    """SW108 for each line whose text (a value, a nested key, a comment) holds an
    invisible or bidirectional character; a config key's own characters are SW107's
    (``keys``), a byte-order mark at the start of the file is none."""
    text = f.raw.decode("utf-8", "replace")
    if text.isascii():
        return
    for n, line in enumerate(text.split("\n"), 1):
        hits = invisible_chars(line)
        if n == 1:
            hits = [(i, c) for i, c in hits if (i, c) != (0, "\ufeff")]
        key = next((k for k in keys if line.lstrip("'\"").startswith(k)), None)
        if key is not None:
            hits = [(i, c) for i, c in hits if i > len(key) + 1]
        if hits:
            f.findings.append(INVISIBLE_TEXT.at(
                f.label, n, hits[0][0] + 1,
                f"{len(hits)} invisible or bidirectional character(s) in this line: "
                f"{shown(line.strip())} may read differently from what it is",
                hint=f"delete {code_points(c for _, c in hits)} unless it is meant"))


def _is_mapping(f: _File) -> bool:
    if isinstance(f.data, dict):
        return True
    from inferencex_tools.schemas import kind_of

    what = "empty" if f.data is None else kind_of(f.data)
    f.findings.append(NOT_MAPPING.at(f.label, 1, 1, f"root must be a mapping of config keys, "
                                     f"found {what}"))
    return False


def _master(f: _File, merged: dict[str, tuple[_File, Any]], refs: _Refs) -> None:
    """One loaded master config: key names across files, schema, rules, references."""
    for k in f.data:
        if isinstance(k, str) and ("?" in k or "[" in k):
            f.add(GLOB_CHAR_KEY, (k,), f"config key {k!r} contains a glob character")
        hidden = invisible_chars(k) if isinstance(k, str) else []
        if hidden:
            plain = "".join(c for c in k if not is_invisible(c))
            f.add(INVISIBLE_KEY, (k,), f"config key {shown(k)} contains {len(hidden)} "
                  f"invisible or bidirectional character(s): it looks like {plain!r}",
                  hint=f"delete {code_points(c for _, c in hidden)}")
        _look_alike(f, k)
        if k in merged:
            f.add(DUP_ACROSS, (k,), f"config key {k!r} is already defined in "
                  f"{merged[k][0].label}")
        else:
            merged[k] = (f, f.data[k])
    reported = _schema(f, "master-config", SCHEMA)
    issues: list[Issue] = check_configs(f.data, strict=True, structural=False)
    for iss in issues:
        if (iss.rule.id, tuple(iss.path)) in reported:
            continue  # the schema said it already (e.g. a minimum and "must be > 0")
        f.add(iss.rule, iss.path, iss.message, severity=iss.severity)
    _references(f, f.data, refs)


def _look_alike(f: _File, key: Any) -> None:
    """SW109: a key with a visible character outside ASCII (``minimаxm3-…`` with a
    Cyrillic ``а``) reads as another key; the real keys are ASCII."""
    odd = [c for c in key if not c.isascii() and not is_invisible(c)] \
        if isinstance(key, str) else []
    if odd:
        f.add(NON_ASCII_KEY, (key,), f"config key {shown(key)} contains {len(odd)} "
              "character(s) outside ASCII: it can look exactly like another key",
              hint=f"spell it in ASCII (it holds {code_points(odd)})")


def _coverage_notes(inp: ValidateInput, result: Result) -> None:
    """What could not be checked: benchmark scripts without benchmarks/, runner labels
    without runners.yaml."""
    if inp.exists is None and inp.masters:
        result.add(NO_SCRIPTS_DIR.at(inp.masters[0].label, None, None,
                                     "benchmarks/ not found next to the configs; benchmark "
                                     "scripts and multinode recipes were not checked"))
    if inp.runners is None and inp.masters:
        result.add(RUNNER_LABEL.at(inp.masters[0].label, None, None,
                                   "no runners.yaml given; runner labels not checked",
                                   severity=Severity.WARNING,
                                   hint="pass --runner-config configs/runners.yaml"))
