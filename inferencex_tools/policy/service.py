"""``ixtool policy check|curves|init|trace`` orchestration: inputs → rows → jobs → traces →
verdicts → findings.  I/O lives here and in the adapters it calls; the judging is pure
(:mod:`.check`, :mod:`.outcomes`)."""

from __future__ import annotations

import contextlib
import functools
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencex_tools.errors import InputError, UsageError, key_hint
from inferencex_tools.io.files import atomic_write, read_bytes
from inferencex_tools.io.layout import Layout, layout_of, no_master_configs
from inferencex_tools.policy.pipeline import (
    Job,
    JobTrace,
    RepoIndex,
    Runner,
    make_job,
    node_for,
)
from inferencex_tools.policy.resolve import (
    Row,
    launcher_families,
    resolve_script,
)
from inferencex_tools.policy.rows import policy_rows
from inferencex_tools.policy.rules import (
    BUILTIN_ENVIRONMENT,
    CONFIG_INVALID,
    CURVE_CHANGED,
    GENERATOR_REFUSED,
    NO_LAUNCHER,
    NOT_CHECKED,
    REGISTRY_INVALID,
    SANDBOX_WEAK,
    STATIC_ONLY,
)
from inferencex_tools.policy.store import (
    DEFAULT_REGISTRY,
    CurveStore,
    derived_store,
    open_store,
    registry_store,
)
from inferencex_tools.progress import ProgressFn
from inferencex_tools.report.findings import Finding, Result
from inferencex_tools.report.words import plural

if TYPE_CHECKING:  # judging and tracing modules load only when a row is traced
    from inferencex_tools.policy.check import RowOutcome, Verdict
    from inferencex_tools.policy.effective import Analyzer
    from inferencex_tools.sandbox import Limits

@dataclass
class CheckRequest:
    root: Path
    configs: list[Path] | None = None
    config_keys: list[str] | None = None
    registry: Path | None = None
    curves_dir: Path | None = None
    timeout: float = 60.0
    jobs: int = 2
    all_evals: bool = False
    isolate: bool | None = None
    allow_unsandboxed: bool = False  # trace without isolation when none is available
    base: str | None = None
    head: str | None = None  # with base: compare this commit, not the working tree
    progress: ProgressFn | None = None  # (done, total, what) as traces finish
    git: Any = None  # with base: an open io.gitcat.GitReader of root to share (the gate's)
    # with base: config_keys are every config block the change touched (``ci gate``), so
    # only their blocks are parsed; the other blocks are the base's own
    keys_are_change: bool = False
    limits: Limits | None = None  # the sandbox's bounds per trace (None: its defaults)
    # a trace cache directory (sandbox/cache.py): results of traces that read the same
    # bytes are reused; ``trace_cache_write`` False: only read (a pull request's head)
    trace_cache: Path | None = None
    trace_cache_write: bool = True
    # the scripts resolved in this check (:func:`_resolve`): not copied by replace()
    resolved: dict[tuple[Any, ...], Any] = field(default_factory=dict, init=False,
                                                 repr=False, compare=False)
    # the open trace cache, shared by every session of this check (:func:`_cache_of`)
    opened: list[Any] = field(default_factory=list, init=False, repr=False, compare=False)


def _cache_of(req: CheckRequest, result: Result) -> Any:
    """The check's trace cache (opened once; its counts in ``info["trace-cache"]``)."""
    if req.trace_cache is None:
        return None
    if not req.opened:
        from inferencex_tools.sandbox import TraceCache

        req.opened.append(TraceCache(req.trace_cache, writable=req.trace_cache_write))
    cache = req.opened[0]
    result.info["trace-cache"] = cache.counts
    return cache


def _resolve(req: CheckRequest, row: Row, family: str) -> Any:
    """:func:`~.resolve.resolve_script` of a row on a runner family, once per check for
    every row that names the same script (the tree does not change during a check)."""
    c = row.config
    try:
        key = (str(req.root), family, row.agentic, row.spec == "mtp",
               *(c.get(k) for k in ("model-prefix", "precision", "framework")))
        hash(key)
    except (TypeError, AttributeError):
        return resolve_script(req.root, row, family)
    if key not in req.resolved:
        req.resolved[key] = resolve_script(req.root, row, family)
    return req.resolved[key]


def _rel(p: Path, root: Path) -> str:
    try:
        return p.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(p)


# ------------------------------------------------------------------------- inputs

def _scope(req: CheckRequest) -> set[str] | None:
    """The config keys whose blocks alone are parsed (see ``keys_are_change``)."""
    keys = req.config_keys
    if not req.keys_are_change or req.base is None or not keys or \
            any(c in k for k in keys for c in "*?["):
        return None
    return set(keys)


_SCRIPT_SUFFIXES = (".sh", ".py", ".bash")


def _every_row_inputs(changes: Any, layouts: tuple[Layout, Layout],
                      reads: bool = True) -> bool:
    """Did the change touch a file that can select rows other than by their config block
    (a script — any .sh/.py/.bash can be in a launcher's or script's closure —, a
    launcher, the workflows, the curves or runners.yaml)?  ``reads`` False: what rows
    read is known otherwise (the base's read map): only the files judged by their role
    (workflows, curves, runners.yaml) count."""
    from inferencex_tools.policy.base import WORKFLOWS

    cdir = DEFAULT_REGISTRY.parent.as_posix() + "/"
    runners = {lay.runners for lay in layouts}
    if not reads:
        return any(f.startswith((WORKFLOWS, cdir)) or f in runners for f in changes.files)
    return any(f.endswith(_SCRIPT_SUFFIXES) or f.startswith((WORKFLOWS, "runners/", cdir))
               or f in runners or f in changes.read_by_scripts for f in changes.files)


def _read_by_scripts(changes: Any, layouts: tuple[Layout, Layout],
                     index_of: Callable[[], RepoIndex]) -> set[str]:
    """The changed files, other than scripts, the layout's own inputs and the curves,
    that a script of the checkout can read (:mod:`.reach`: a name it spells, a glob or
    pattern its reading commands, redirections and loops bound, a Python import, a
    directory it lists; through a symbolic link to them): they select the rows whose
    closure reaches them.  A name a script computes whole is not seen
    (docs/security.md)."""
    cdir = DEFAULT_REGISTRY.parent.as_posix() + "/"
    wanted = {f for f in changes.files
              if not f.endswith(_SCRIPT_SUFFIXES) and not f.startswith(cdir)
              and not any(lay.is_input(f) for lay in layouts)}
    if not wanted:
        return set()
    index = index_of()
    an = index.analyzer
    aliases = _aliases(index, wanted)
    scripts = sorted(p for p in index.files if p.endswith(_SCRIPT_SUFFIXES))
    # a file whose name a script's text spells counts (a name in a comment too: more
    # rows, never fewer) without parsing every script; the others by the names the
    # scripts' syntax reads (globs, directories)
    texts = [t for t in map(an.read, scripts) if t]
    spelt = {f for f, alias in aliases.items()
             if any(a.rsplit("/", 1)[-1] in t for a in alias for t in texts)}
    if len(spelt) < len(aliases):
        spelt |= _read_by_syntax(index, scripts, aliases)
    # (a name spelt is a substring of some script: it does not say the data's name is
    # not the way a launch reaches it)
    listed = _listed_by_data(index, texts, {f: a for f, a in aliases.items()
                                            if not _modelled(layouts, f)})
    changes.listed_by_data = listed
    return spelt | listed


def _listed_by_data(index: RepoIndex, texts: list[str], aliases: dict[str, set[str]]
                    ) -> set[str]:
    """The files of ``aliases`` a data file the scripts name can name (a list a script
    reads names from: :func:`.effective.data_names`)."""
    if not aliases:
        return set()
    an = index.analyzer
    words = set(re.findall(r"[\w.-]+", "\n".join(texts)))
    names: set[str] = set()
    for path in index.files:
        if not path.endswith(_SCRIPT_SUFFIXES) and path.rsplit("/", 1)[-1] in words:
            names |= an.listed(path)
    by_base: dict[str, list[str]] = {}
    for n in names:
        by_base.setdefault(n.rsplit("/", 1)[-1], []).append(n)
    return {f for f, alias in aliases.items()
            if any(_name_matches(a, by_base.get(a.rsplit("/", 1)[-1], ())) for a in alias)}


def _read_by_syntax(index: RepoIndex, scripts: list[str], aliases: dict[str, set[str]]
                    ) -> set[str]:
    """The files of ``aliases`` (file → its names) the scripts' syntax reads."""
    an = index.analyzer
    names: set[str] = set()
    for path in scripts:
        if (p := an.parsed(path)) is not None:
            names |= p.refs
    reached = an.matching(frozenset(names))
    return {f for f, alias in aliases.items() if alias & reached or any(
        _name_matches(a, names) for a in alias)}


def _modelled(layouts: tuple[Layout, Layout], path: str) -> bool:
    """Is ``path`` a file the check judges by its role, not as a file a launch reads: a
    master config or runners.yaml (their blocks and labels), a workflow (the job view),
    a curve, the changelog?  A name a data file holds never selects through one."""
    from inferencex_tools.policy.base import WORKFLOWS

    return path.startswith((WORKFLOWS, DEFAULT_REGISTRY.parent.as_posix() + "/")) or \
        path.endswith("perf-changelog.yaml") or any(lay.is_input(path) for lay in layouts)


def _aliases(index: RepoIndex, wanted: set[str]) -> dict[str, set[str]]:
    """A changed file counts under each name it has: its own, and every link to it."""
    aliases: dict[str, set[str]] = {f: {f} for f in wanted}
    for path in index.files:
        target = index.analyzer.target(path)
        if target is not None and target in aliases:
            aliases[target].add(path)
    return aliases


def _name_matches(path: str, names: Iterable[str]) -> bool:
    """Does a name glob match the path's end or a directory above it (a file the change
    deletes is in no index)?"""
    from inferencex_tools.policy.reach import suffix_match

    return any(suffix_match(n, path) for n in names)


def _named_by(texts: Iterable[str], changes: Any) -> bool:
    """Does a master config name a changed file (where a recipe setting would), or hold
    an escape that could spell one?"""
    names = {f.rsplit("/", 1)[-1] for f in changes.files}
    return any("\\" in t or any(n in t for n in names) for t in texts)


def _change_scope(changes: Any, layouts: tuple[Layout, Layout], head: dict[str, bytes],
                  base: dict[str, bytes]) -> set[str] | None:
    """--base: the config keys whose rows the change can select, when only their config
    blocks can select them (nothing in :func:`_every_row_inputs` changed and no master
    config names a changed file): the keys of the blocks that differ between the base's
    and the checkout's master configs (files of the same name).  None when other rows may
    be selected or a file cannot be split.  With a base read map that knows every row,
    scripts and data files select through it (the caller adds its rows' keys)."""
    from inferencex_tools.sweep import blocks as B

    reads = not _map_knows_every_row(changes)  # (else the map's rows are added after)
    if _every_row_inputs(changes, layouts, reads):
        return None
    texts = {p.rsplit("/", 1)[-1]: raw.decode("utf-8", "replace") for p, raw in head.items()}
    if reads and _named_by(texts.values(), changes):
        return None
    old = {p.rsplit("/", 1)[-1]: raw.decode("utf-8", "replace") for p, raw in base.items()}
    keys: set[str] = set()
    for name, text in texts.items():
        t = B.touched(text, old.get(name))
        if t is None:
            return None
        keys.update(b.key for b in t[0])
    return keys


def _can_select(changes: Any, layouts: tuple[Layout, Layout], head: dict[str, bytes]
                ) -> bool:
    """--base: can the change select any row?  Only through a file a row can read: a
    master config or runners.yaml (either side's layout), a script, launcher, workflow
    or curve, or a recipe a master config names."""
    if _every_row_inputs(changes, layouts):
        return True
    if any(lay.is_input(f) for lay in layouts for f in changes.files):
        return True
    return _named_by((raw.decode("utf-8", "replace") for raw in head.values()), changes)


def _configs(req: CheckRequest, result: Result, scope: set[str] | None = None,
             layout: Layout | None = None) -> tuple[Any, list[str]]:
    from inferencex_tools.sweep.load import merge_masters

    root = req.root
    files = req.configs or [root / p for p in (layout or layout_of(root)).masters]
    if not files:
        raise no_master_configs(root)
    parts = [(_rel(f, root), read_bytes(f)) for f in files]
    if scope is not None:
        scoped = _scoped_configs(parts, scope, complete=True)
        if scoped is not None:
            return scoped, [p for p, _ in parts]
    try:
        configs = merge_masters(parts)
    except InputError as exc:
        result.add(CONFIG_INVALID.at(parts[0][0], None, None, str(exc)))
        return None, [p for p, _ in parts]
    return configs, [p for p, _ in parts]


def _scoped_configs(parts: list[tuple[str, bytes]], scope: set[str], *, complete: bool
                    ) -> Any:
    """The configs with only the ``scope`` keys parsed (their blocks), or None where the
    files cannot be split safely or (``complete``) a key is missing: then the whole files
    are parsed."""
    from inferencex_tools.sweep import blocks as B

    try:
        files = B.split_files([(label, raw.decode("utf-8")) for label, raw in parts])
        out = B.configs_of(files, scope, dict(parts))
    except (UnicodeDecodeError, B.Unsplittable):
        return None
    return out if set(out.data) == scope or not complete else None


def _runners(root: Path, result: Result, layout: Layout | None = None) -> Any:
    """runners.yaml; one that does not load is a PO206 warning (rows are then generated
    without runner labels and hardware, and the keys that need them are refused)."""
    from inferencex_tools.sweep.load import Runners, parse_runners

    rel = (layout or layout_of(root)).runners
    p = root / rel
    if not p.is_file():
        return Runners()
    try:
        return parse_runners(read_bytes(p), rel)
    except InputError as exc:
        result.add(GENERATOR_REFUSED.at(
            rel, None, None, f"{rel} does not load ({exc.message}): rows are "
            "generated without its runner labels and hardware; keys that need them are "
            "not checked", data={"config_keys": [], "rows": []}))
        return Runners()


def row_families(req: CheckRequest) -> list[tuple[Row, str]]:
    """Every row the check would trace, with each runner family it can land on, without
    tracing anything (``ixtool al audit`` picks the keys its artifacts belong to)."""
    result = Result("policy rows")
    configs, _ = _configs(req, result)
    if configs is None:
        return []
    runners = _runners(req.root, result)
    rows, _, _ = _rows(req, configs, runners, result)
    return [(row, fam) for row in rows
            for fam in launcher_families(req.root, str(row.config.get("runner")),
                                         runners.labels or None)]


def repo_runners(root: Path) -> Any:
    """``configs/runners.yaml`` of ``root`` (empty when absent or unreadable)."""
    return _runners(root, Result("policy rows"))


def repo_workflows(root: Path) -> Any:
    """The workflows of ``root`` that dispatch benchmark jobs (None: built-in env)."""
    return _workflows(root)


def _workflows(root: Path) -> Any:
    from inferencex_tools.io.layout import workflow_files
    from inferencex_tools.workflow import load_workflows

    wf = load_workflows(workflow_files(root))
    return wf if wf.dispatches or wf.row_job else None


def _base_store(req: CheckRequest, base: str, result: Result,
                prefixes: Container[str]) -> CurveStore:
    """Curves and registry as the base commit has them (integrity: a change cannot bring
    its own curves)."""
    from inferencex_tools.policy.base import base_files

    root = req.root
    cdir = DEFAULT_REGISTRY.parent.as_posix()
    blobs = base_files(root, base, cdir + "/", reader=req.git)
    curves = {k.rsplit("/", 1)[-1]: v for k, v in blobs.items()
              if k.count("/") == 1 and k.endswith(".yaml") and
              not k.endswith("/" + DEFAULT_REGISTRY.name)}
    reg = blobs.get(DEFAULT_REGISTRY.as_posix())
    if req.registry is not None:
        return open_store(req.registry, req.curves_dir, root=root)
    if reg is not None:
        return registry_store(reg, f"{DEFAULT_REGISTRY.as_posix()}@{base[:12]}",
                              curves_dir=root / cdir, display_dir=cdir, blobs=curves)
    texts = [b.decode("utf-8", errors="replace")
             for p, b in base_files(root, base, "benchmarks/", reader=req.git).items()
             if p.endswith((".sh", ".yaml", ".yml", ".py")) and len(b) <= 512 * 1024]
    readme = blobs.get(f"{cdir}/README.md")
    return derived_store(curves, display_dir=cdir, curves_dir=root / cdir,
                         readme=readme.decode("utf-8", errors="replace") if readme else None,
                         prefixes=prefixes, recipe_texts=texts)


# ------------------------------------------------------------------------- rows & jobs

def _rows(req: CheckRequest, configs: Any, runners: Any, result: Result
          ) -> tuple[list[Row], dict[str, tuple[str, int | None]], dict[str, str]]:
    """The rows of the selected keys from the sweep generator, the spec-decoding keys and
    the keys the generator refuses (left out; each gets its own finding, see
    :func:`_refused`)."""
    rs = policy_rows(configs, runners, globs=req.config_keys, all_evals=req.all_evals)
    if req.config_keys and not rs.matched:
        raise UsageError("no config key matches "
                         + " ".join(repr(g) for g in req.config_keys),
                         hint=key_hint(req.config_keys, configs.keys))
    result.info["rows-from"] = "sweep matrix"
    if rs.refused:
        n = plural(len(rs.refused), "key")
        result.info["rows-from"] = (f"sweep matrix, key by key ({n} refused by the "
                                    "generator: " + ", ".join(sorted(rs.refused)) + ")")
    return rs.rows, rs.spec_keys, rs.refused


def _refused(refused: dict[str, str], configs: Any, keys: Container[str] | None,
             result: Result) -> None:
    """PO206 for each key the sweep generator refuses (among ``keys``, when given: in PR
    mode the keys the change touched)."""
    from inferencex_tools.policy.resolve import key_lines

    for key, why in sorted(refused.items()):
        if keys is not None and key not in keys:
            continue
        file = configs.origin.get(key, "")
        raw = configs.sources.get(file, b"")
        line = key_lines(raw.decode("utf-8", errors="replace")).get(key)
        result.add(GENERATOR_REFUSED.at(
            file, line, 1, f"{key}: not checked: the sweep generator refuses this config "
            f"entry ({why}); no row of it is traced, and the other keys' rows do not "
            "depend on it", data={"config_keys": [key], "rows": []}))


def _jobs(req: CheckRequest, rows: list[Row], runners: Any, wf: Any,
          result: Result, changed: Callable[[Row, str | None], bool] | None = None,
          relabelled: Callable[[Row], bool] | None = None
          ) -> tuple[list[Job], list[RowOutcome]]:
    """The rows' jobs, and a "not checked" outcome for each row whose config entry is
    too malformed to give a job's environment.  A row without a launcher is PO201 (in PR
    mode, ``changed``: only when the change can have caused it); a row on a label
    runners.yaml does not list is not checked — in PR mode PO201 when the change put the
    key on it (``relabelled``)."""
    jobs: list[Job] = []
    malformed: list[RowOutcome] = []
    reported: set[tuple[str, str]] = set()

    def no_launcher(row: Row, tag: str, why: str, launcher: str | None = None) -> None:
        """One PO201 per (key, runner label or family)."""
        if changed is not None and not changed(row, launcher):
            return
        if (row.key, tag) not in reported:
            reported.add((row.key, tag))
            result.add(NO_LAUNCHER.at(row.config_file, row.key_line, 1, f"{row.key}: {why}",
                                      data={"config_keys": [row.key], "rows": [row.ref()]}))

    for row in rows:
        label = str(row.config.get("runner"))
        families = launcher_families(req.root, label, runners.labels or None)
        if not families and runners.labels and label not in runners.labels \
                and (relabelled is None or not relabelled(row)):
            # (a PR that put the key on the label must list it)
            malformed.append(_unknown_label(row, label))
        elif not families:
            no_launcher(row, label, f"no runners/launch_<family>.sh for runner '{label}'")
        for fam in families:
            try:
                job = make_job(wf, row, fam, node_for(fam, label, runners.labels))
            except (TypeError, ValueError, AttributeError, KeyError) as exc:
                from inferencex_tools.policy.check import RowOutcome

                o = RowOutcome(row, None, [], [], family=fam)
                o.unchecked = (f"its config entry is malformed ({type(exc).__name__}: {exc}); "
                               "`ixtool config validate` shows where")
                malformed.append(o)
                break
            if job.refused:  # no job starts: nothing to trace (the base's view: the head's)
                from inferencex_tools.policy.check import RowOutcome

                o = RowOutcome(row, None, [], [], family=fam)
                o.unchecked = ("the runner would not start its job: "
                               + "; ".join(job.refused))
                malformed.append(o)
            elif job.launcher is None or not (req.root / job.launcher).is_file():
                no_launcher(row, fam, f"runner '{label}' → {fam}: {job.launcher} does not exist",
                            job.launcher or f"runners/launch_{fam}.sh")
            else:
                jobs.append(job)
    return jobs, malformed


def _unknown_label(row: Row, label: str) -> RowOutcome:
    """A row whose runner label runners.yaml does not list and no launcher is named
    after: which machines run it — and so which launcher — is not in the repository
    (GitHub assigns the label to runners): not checked, not a missing launcher."""
    from inferencex_tools.policy.check import RowOutcome

    o = RowOutcome(row, None, [], [])
    o.unchecked = (f"its runner label '{label}' is not in runners.yaml and no "
                   "runners/launch_<family>.sh is named after it: the machines (and so the "
                   "launcher) that run it are not known from the repository")
    return o


def _relabelled(changes: Any, base_configs: dict[str, Any], row: Row) -> bool:
    """--base: can the change have left the row's key on a label nothing resolves: a new
    key, another label than the base's, the label's runners.yaml entry or a launcher the
    label resolves to by name (:func:`.resolve.named_for`) changed?  (Real head #1201
    edited dsv4-fp4-b200-vllm-mtp's block, not its label 'b200-dsv4', which runners.yaml
    lists at neither side: the whole check calls it not checked, the gate said PO201.)"""
    from inferencex_tools.policy.resolve import named_for

    base = base_configs.get(row.key)
    label = str(row.config.get("runner"))
    return not isinstance(base, Mapping) or str(base.get("runner")) != label or \
        changes.runner_labels is None or label in changes.runner_labels or \
        any(named_for(label, f) for f in changes.files)


def _launcher_may_change(changes: Any, base_configs: dict[str, Any], row: Row,
                         launcher: str | None) -> bool:
    """--base: can the change have taken a row's launcher away: its config block or its
    runner label's runners.yaml entry changed, or the launcher (``launcher``; None: a
    launcher the label resolves to by name, :func:`.resolve.named_for`) is a changed
    path?  (A launcher of another name cannot: real heads #1796, #1798 and #1949 edited
    other launchers and got PO201 for keys on 'b200-dsv4', a label no side lists.)"""
    from inferencex_tools.policy.resolve import named_for

    label = str(row.config.get("runner"))
    if row.config != base_configs.get(row.key) or changes.runner_labels is None or \
            label in changes.runner_labels:
        return True
    if launcher is not None:
        return launcher in changes.files
    return any(named_for(label, f) for f in changes.files)


def _refused_in_change(refused: dict[str, str], configs: Any, changes: Any,
                       base_configs: dict[str, Any], changed_prefixes: dict[str, str]
                       ) -> set[str]:
    """--base: the refused keys the change can have refused: their config block, the
    runners.yaml entry of their label or their curve changed (what the generator reads)."""
    out: set[str] = set()
    for key in refused:
        cfg = configs.data.get(key) or {}
        if cfg != base_configs.get(key) or changes.runner_labels is None or \
                str(cfg.get("runner")) in (changes.runner_labels or ()) or \
                str(cfg.get("model-prefix")) in changed_prefixes:
            out.add(key)
    return out


def _environment(jobs: list[Job], result: Result) -> None:
    """``info["job-environment"]`` as it is (``workflows``, ``built-in`` or ``mixed``), and
    a PO311 warning naming the rows judged with the built-in environment, per reason."""
    builtin: dict[str, list[Job]] = {}
    for j in jobs:
        if j.source != "workflow":
            builtin.setdefault(j.notes[0] if j.notes else "no workflow", []).append(j)
    n = sum(len(v) for v in builtin.values())
    result.info["job-environment"] = ("workflows" if not n else
                                      "built-in" if n == len(jobs) else "mixed")
    for why, js in builtin.items():
        refs = [{**j.row.ref(), "family": j.family} for j in js]
        keys = sorted({j.row.key for j in js})
        shown = ", ".join(keys[:6]) + (f" (+{len(keys) - 6} more)" if len(keys) > 6 else "")
        j0 = js[0]
        result.add(BUILTIN_ENVIRONMENT.at(
            j0.row.config_file, j0.row.key_line, 1,
            f"{plural(len(js), 'row')} of {plural(len(keys), 'config key')} ({shown}) are "
            f"judged with ixtool's built-in job environment, not the workflows': {why}",
            data={"config_keys": keys, "rows": refs}))


def _modeled(jobs: list[Job]) -> tuple[list[Job], list[RowOutcome]]:
    """The jobs whose framework serves with an engine ixtool judges; the others get no
    trace and a "not checked" outcome that names the framework."""
    from inferencex_tools.policy.engines import ENGINES, framework_engine

    keep: list[Job] = []
    out: list[RowOutcome] = []
    for j in jobs:
        fw = str(j.row.config.get("framework", ""))
        if framework_engine(fw) is not None:
            keep.append(j)
            continue
        from inferencex_tools.policy.check import RowOutcome

        o = RowOutcome(j.row, j.launcher, [], [], family=j.family)
        o.unchecked = (f"framework '{fw}' serves with no engine ixtool models "
                       f"({', '.join(ENGINES)}): its launch cannot be judged")
        out.append(o)
    return keep, out


def _candidates(req: CheckRequest, rows: list[Row], runners: Any, index: RepoIndex,
                changes: Any, base_configs: dict[str, Any],
                changed_prefixes: dict[str, str],
                buckets: frozenset[str] | None = frozenset()) -> list[Row]:
    """--base, before any job is derived: the rows that may depend on the change.  When a
    launcher changed every row may; otherwise a row may when its matrix bucket's job
    derivation changed (``buckets``: those buckets, None: every one), its config block,
    its runner label's runners.yaml entry or its curve changed, or what its launchers,
    scripts (by the naming rule) or recipes read.  :func:`_relevant` decides on the jobs
    of these rows."""
    from inferencex_tools.workflow import bucket_of

    if changes.any_under(("runners/",)) or changes.runner_labels is None or buckets is None:
        return rows
    # a launcher's or a script's closure holds the file itself and the .sh/.py/.bash
    # files it names (effective._FILE_REF): when no such file changed, only a row's
    # recipes can tie it to the change
    scripts = any(f.endswith(_SCRIPT_SUFFIXES) for f in changes.files) or \
        bool(changes.read_by_scripts)
    keep: list[Row] = []
    for row in rows:
        if row.config != base_configs.get(row.key) or \
                str(row.config.get("model-prefix")) in changed_prefixes or \
                str(row.config.get("runner")) in changes.runner_labels or \
                (buckets and bucket_of(row.matrix) in buckets):
            keep.append(row)
            continue
        proof = changes.proof(row)
        if proof is not None:  # the base's read map knows what its launch read
            if proof:
                keep.append(row)
            continue
        files = _row_inputs(req, row, runners, scripts)
        if any(changes.files.intersection(_reach_of(index.analyzer, changes, f)
                                          if f in index.files else (f,)) for f in files):
            keep.append(row)
    return keep


def _reach_of(an: Analyzer, changes: Any, entry: str) -> Iterable[str]:
    """The files ``entry`` can reach at all: what its text names, and — when a changed
    file is one a data file can name (``changes.listed_by_data``) — what it can read."""
    return an.files_listed(entry) if changes.listed_by_data else an.files(entry)


def _row_inputs(req: CheckRequest, row: Row, runners: Any, scripts: bool) -> list[str]:
    """The files a row's jobs start from: its launchers and scripts (when ``scripts``:
    a .sh/.py/.bash file changed) and the recipes its multi-node settings name."""
    from inferencex_tools.policy.resolve import recipe_path

    files: list[str] = []
    for fam in (launcher_families(req.root, str(row.config.get("runner")),
                                  runners.labels or None) if scripts else ()):
        files.append(f"runners/launch_{fam}.sh")  # with what it sources or names
        res = _resolve(req, row, fam)
        if res.script:
            files.append(res.script)
    for side in ("prefill", "decode"):
        for st in (row.entry.get(side) or {}).get("additional-settings") or []:
            name, _, value = str(st).partition("=")
            if name in ("CONFIG_FILE", "EVAL_CONFIG_FILE") and value:
                files.append(recipe_path(value)[0])
    return files


def _base_workflows(root: Path, changes: Any, reader: Any) -> Any:
    """--base when the workflows changed: the base's workflows (None: none that
    dispatch benchmark jobs)."""
    from inferencex_tools.policy.base import WORKFLOWS, base_files
    from inferencex_tools.workflow import load_workflows

    files = {p: b for p, b in base_files(root, changes.base, WORKFLOWS, reader=reader).items()
             if p.count("/") == 2 and p.endswith((".yml", ".yaml"))}
    wf = load_workflows(files)
    return wf if wf.dispatches or wf.row_job else None


def _changed_buckets(base: Any, head: Any) -> frozenset[str] | None:
    """--base, the workflows changed: the matrix buckets whose job derivation (the
    dispatching job and its template) differs between the base's and the checkout's
    workflows; None: every bucket (a side without workflows, or ``ixtool ci row``'s job
    changed)."""
    from inferencex_tools.workflow.jobenv import BUCKETS

    if base is None or head is None:
        return None if (base is None) != (head is None) else frozenset()
    if base.row_job != head.row_job:
        return None

    def derivation(wf: Any, bucket: str) -> Any:
        d = wf.dispatch_for(bucket)
        return None if d is None else (d, wf.templates.get(d.template))

    return frozenset(b for b in BUCKETS if derivation(base, b) != derivation(head, b))


def _job_changed(req: CheckRequest, j: Job, base_wf: Any, index: RepoIndex) -> str | None:
    """--base, the workflows changed: how this job differs from the same row's job under
    the base's workflows (its launcher, where its environment comes from, the variables
    whose value differs, when its launcher or benchmark script observes them: the same
    analysis that decides when two jobs share a trace); None when it is the same job."""
    old = make_job(base_wf, j.row, j.family, j.node)
    if old.launcher != j.launcher:
        return f"the workflows start {j.launcher} instead of {old.launcher}"
    if old.source != j.source:
        return f"the job's environment now comes from {j.source}, was {old.source}"
    names = sorted(k for k in old.env.keys() | j.env.keys() if old.env.get(k) != j.env.get(k))
    if not names:
        return None
    shown = ", ".join(names[:5]) + (f" (+{len(names) - 5} more)" if len(names) > 5 else "")
    script = _resolve(req, j.row, j.family).script
    if not _same_observed(index, j.launcher, script, j.env, old.env, names):
        return f"the workflows changed the job's environment ({shown})"
    return None


# what the check itself reads of a job's environment, besides what its scripts observe
_JUDGED_ENV = frozenset({"CONFIG_FILE", "EVAL_CONFIG_FILE", "IS_MULTINODE", "FRAMEWORK",
                         "MODEL_PREFIX", "PRECISION", "LAUNCHER"})


def _same_observed(index: RepoIndex, launcher: str | None, script: str | None,
                   new: Mapping[str, str], old: Mapping[str, str], names: list[str]) -> bool:
    """Do a launcher and its script observe the same of two environments that differ in
    ``names``?  The closure's key first (what decides when two jobs share a trace); when
    it differs, what the entries can run: the closure counts every word of every file it
    names, a variable only a Python file the job never runs spells is not observed (real
    PR #2096: three variables named by utils/*.py, 104 keys traced).  A variable the
    check or an engine rule reads (:data:`~.effective.ALWAYS`), one a data file they
    read names (a template a program expands), or an entry whose read set is not known,
    is observed."""
    from inferencex_tools.policy.effective import ALWAYS, ALWAYS_PREFIXES, key

    if any(n in ALWAYS or n.startswith(ALWAYS_PREFIXES) or n in _JUDGED_ENV
           for n in names):
        return False
    an = index.analyzer
    for entry in (launcher, script):
        if entry is None:
            continue
        if entry not in index.files:
            return False
        if key(new, an.closure(entry, new)) == key(old, an.closure(entry, old)):
            continue
        exact = entry == launcher
        seen = [an.observed(entry, e, exact=exact) for e in (new, old)]
        if any(s is None or any(n in s for n in names) for s in seen):
            return False
    return True


def _judged(row: Row) -> tuple[Any, ...]:
    """What of a row the check judges besides its job: the verdict's rules and curves
    read these (:mod:`.check`), a standing verdict is matched by the entry's label."""
    cfg = row.config
    return (row.key, row.spec, row.scenario, row.eval_only, row.multinode, row.conc,
            row.entry_label(), tuple(sorted((row.seq or {}).items())), row.dram_gb,
            *(str(cfg.get(f)) for f in ("framework", "model-prefix", "precision", "runner")))


class _BaseJobs:
    """--base: the jobs the base's config block of a key gives (the checkout's runners,
    ``wf``: the base's workflows), by what identifies a job across the two sides; a key
    the base's block cannot expand has none."""

    def __init__(self, req: CheckRequest, base_configs: dict[str, Any], runners: Any,
                 wf: Any) -> None:
        self.req, self.base_configs, self.runners, self.wf = req, base_configs, runners, wf
        self._by_key: dict[str, dict[tuple[Any, ...], list[Job]]] = {}

    @staticmethod
    def ident(j: Job) -> tuple[Any, ...]:
        return (_judged(j.row), j.family, j.node)

    def of(self, j: Job, twins: int) -> Job | None:
        """The base's one job that is ``j``'s (None: none, or not one; ``twins``: the
        checkout's jobs like ``j``, itself included — a second one is a job the base
        does not run as often, which the difference rule counts)."""
        k = j.row.key
        if k not in self._by_key:
            self._by_key[k] = {}
            from inferencex_tools.sweep.load import Configs

            cfgs = Configs(data={k: self.base_configs[k]}, origin={k: ""}, sources={})
            try:
                rs = policy_rows(cfgs, self.runners, globs=[k], all_evals=self.req.all_evals)
                jobs, _ = _jobs(self.req, rs.rows, self.runners, self.wf,
                                Result("policy check"))
            except (InputError, UsageError, TypeError, ValueError, LookupError,
                    AttributeError):
                jobs = []
            for b in jobs:
                self._by_key[k].setdefault(self.ident(b), []).append(b)
        found = self._by_key[k].get(self.ident(j), [])
        return found[0] if len(found) == 1 and twins == 1 else None


def _config_moved(req: CheckRequest, j: Job, bases: _BaseJobs, index: RepoIndex,
                  twins: int) -> bool:
    """--base, the row's config block changed: does this job differ from the base's same
    job (the one the base's block gives with the same entry, concentration and mode)?
    It does not when the check judges the two rows alike and they start the same
    launcher and script with environments that differ only in variables neither
    observes (a block gaining a field the workflows pass on and no script reads)."""
    old = bases.of(j, twins)
    if old is None or old.launcher != j.launcher or old.source != j.source or \
            old.refused != j.refused or old.notes != j.notes:
        return True
    script = _resolve(req, j.row, j.family).script
    if script != _resolve(req, old.row, old.family).script:
        return True
    names = sorted(k for k in old.env.keys() | j.env.keys() if old.env.get(k) != j.env.get(k))
    return bool(names) and not _same_observed(index, j.launcher, script, j.env, old.env,
                                              names)




class _Deltas:
    """--base: the changed files a job's entry (launcher, script, recipe) really reaches:
    its closure's changed files that the text it can run names (not a file named only in
    a function it never calls), except a shell file on both sides whose change is only in
    function bodies that text never names (:class:`~.base.ShellDelta`; computed once per
    file)."""

    def __init__(self, req: CheckRequest, index: RepoIndex, changes: Any) -> None:
        self.req, self.index, self.changes = req, index, changes
        self._deltas: dict[str, Any] = {}

    def delta(self, path: str) -> Any:
        """The file's :class:`~.base.ShellDelta`, or None (not a shell file on both
        sides: any change counts)."""
        if path not in self._deltas:
            self._deltas[path] = None
            if path.endswith((".sh", ".bash")) and path in self.index.files:
                from inferencex_tools.policy.base import ShellDelta, base_text

                old = base_text(self.req.root, self.changes.base, path, reader=self.req.git)
                new = self.index.analyzer.read(path)
                if old is not None and new is not None:
                    self._deltas[path] = ShellDelta.of(old, new)
        return self._deltas[path]

    def reached(self, entry: str, env: Mapping[str, str], exact: bool = False
                ) -> tuple[str, ...]:
        if entry not in self.index.files:
            return (entry,)
        an = self.index.analyzer
        changed = sorted(set(_reach_of(an, self.changes, entry)) & self.changes.files)
        if not changed:
            return ()
        runs = an.reachable_files(entry, env, exact=exact)
        out: list[str] = []
        words: frozenset[str] | None = None
        asked = False
        for f in changed:
            if runs is not None and f not in runs:
                continue  # named only where the entry never goes
            d = self.delta(f)
            if d is not None and not d.top and not d.functions:
                continue  # comments and layout only: nothing that runs changed
            if d is not None and not d.top:
                if not asked:
                    words, asked = an.reachable_words(entry, env), True
                if words is not None and not (d.functions & words):
                    continue
            out.append(f)
        return tuple(out)


def _reached(deltas: _Deltas, j: Job, entry: str) -> tuple[str, ...]:
    """The changed files ``entry`` of job ``j`` reaches: the launcher's environment is
    the job's, all of it (``exact``); a script's is what the launcher passes on, taken
    as the job's (its branches pruned by it, as the trace-sharing analysis does)."""
    return deltas.reached(entry, j.env, exact=entry == j.launcher)


def _entries(req: CheckRequest, j: Job) -> list[str]:
    """The files a job starts from: its launcher, its script, its recipes."""
    from inferencex_tools.policy.resolve import recipe_path

    files: list[str] = [f for f in (j.launcher,) if f]
    res = _resolve(req, j.row, j.family)
    if res.script:
        files.append(res.script)
    files += [recipe_path(j.env[name])[0] for name in ("CONFIG_FILE", "EVAL_CONFIG_FILE")
              if j.env.get(name)]
    return files


def _view_edited(j: Job, files: list[str], changes: Any, deltas: _Deltas) -> bool:
    """Does the change edit the job's view: its runner label's runners.yaml entry (or
    runners.yaml unreadably), or a file under ``runners/`` the job reaches?"""
    label = str(j.row.config.get("runner"))
    return (changes.runner_labels is None or label in changes.runner_labels
            or any(f.startswith("runners/") for e in files for f in _reached(deltas, j, e)))


def _relevant(req: CheckRequest, jobs: list[Job], index: RepoIndex, changes: Any,
              base_configs: dict[str, Any], changed_prefixes: dict[str, str],
              base_wf: Any = None, wf: Any = None, view: set[int] | None = None,
              runners: Any = None) -> tuple[list[Job], dict[str, list[str]]]:
    """--base: the jobs whose inputs changed, and why (``base_wf``: the base's workflows,
    when they changed: a job is then traced when its own job differs).  ``view`` gets the
    ids of the kept jobs whose job view the change edits: the base's workflows give them
    another job, their runner label's runners.yaml entry changed, or a file under
    ``runners/`` they reach changed (the others run the same in the base's job view).
    With ``runners``, a job of a changed config block whose base job is the same
    (:func:`_config_moved`) is not traced for that."""
    from inferencex_tools.policy.base import WORKFLOWS, row_reasons
    from inferencex_tools.workflow import bucket_of

    keep: list[Job] = []
    why: dict[str, list[str]] = {}
    buckets = _changed_buckets(base_wf, wf) if changes.any_under((WORKFLOWS,)) \
        else frozenset()
    deltas = _Deltas(req, index, changes)
    # the base's job of a row: the base's block under the base's workflows
    bases = _BaseJobs(req, base_configs, runners, base_wf if changes.any_under((WORKFLOWS,))
                      else wf) if runners is not None else None
    twins = Counter(_BaseJobs.ident(j) for j in jobs) if bases is not None else Counter()
    for j in jobs:
        files = _entries(req, j)
        proof = changes.proof(j.row)
        reasons = row_reasons(
            key=j.row.key, config=j.row.config, base_config=base_configs.get(j.row.key),
            files=files if proof is None else (), changes=changes,
            prefix=str(j.row.config.get("model-prefix")),
            changed_prefixes=changed_prefixes,
            closure=functools.partial(_reached, deltas, j),
            moved=None if bases is None else functools.partial(
                _config_moved, req, j, bases, index, twins[_BaseJobs.ident(j)]))
        if proof:
            reasons.append(f"{', '.join(sorted(proof))} changed (its launch read it at the "
                           "base: the read map)")
        moved = _job_changed(req, j, base_wf, index) if buckets is None or (
            buckets and bucket_of(j.row.matrix) in buckets) else None
        if moved:
            reasons.append(moved)
        if reasons:
            keep.append(j)
            if view is not None and (moved or _view_edited(j, files, changes, deltas)):
                view.add(id(j))
            why.setdefault(j.row.key, [])
            for r in reasons:
                if r not in why[j.row.key]:
                    why[j.row.key].append(r)
    return keep, why


def _curve_changes(req: CheckRequest, changes: Any, store: CurveStore,
                   result: Result) -> dict[str, str]:
    """PO109 for every curve/registry file the change touches; prefix → reason."""
    cdir = DEFAULT_REGISTRY.parent.as_posix() + "/"
    out: dict[str, str] = {}
    for f in sorted(changes.files):
        if not f.startswith(cdir) or not f.endswith(".yaml"):
            continue
        name = f[len(cdir):]
        state = ("added" if not store.has_file(name) and name != DEFAULT_REGISTRY.name
                 else "deleted" if not (req.root / f).exists() else "modified")
        result.add(CURVE_CHANGED.at(
            f, 1, 1, f"{f} is {state} in this change (against {changes.base[:12]}); recipes "
            "are checked against the base commit's curves",
            data={"config_keys": [], "rows": [], "file": f}))
        for e in store.registry.entries:
            if e.curve == name or name == DEFAULT_REGISTRY.name:
                out[e.model_prefix] = f"{f} changed"
    return out


# ------------------------------------------------------------------------- the check

@dataclass
class Checked:
    """A check's result with what it judged: every traced row's outcome and the curves
    (``ixtool al audit`` reads the launches from them)."""

    result: Result
    outcomes: list[RowOutcome]
    store: CurveStore | None  # None: nothing was judged (no changed file is an input)


def run_check(req: CheckRequest) -> Result:
    return check(req).result


@dataclass
class _Change:
    """What ``--base`` compares: the change, the checkout's layout (with the base's
    settings), the base's configs, curves and the keys a block-scoped check parses."""

    changes: Any
    layout: Layout
    base_cfgs: dict[str, Any]
    store: CurveStore
    scope: set[str] | None
    view: set[int] = field(default_factory=set)  # jobs whose job view the change edits


def _change(req: CheckRequest, result: Result, started: float,
            index_of: Callable[..., RepoIndex]) -> _Change | None:
    """--base: the change and the base side; None when no row can be selected
    (``index_of``: the checkout's index, made once)."""
    from inferencex_tools.policy.base import base_files, changed_files

    root, scope = req.root, _scope(req)
    changes = changed_files(root, req.base or "HEAD", req.head, reader=req.git)
    _read_proofs(req, changes, result)
    base_layout, layout = _layouts(root, changes.base, req.git)  # the base locates both
    layouts = (layout, base_layout)
    head_masters = _read_all(root, layout.masters)
    index_of(changes.files, functools.partial(_modelled, layouts))  # (first: the index
    # knows the change)
    if not _map_knows_every_row(changes):  # (else what rows read is the map's)
        changes.read_by_scripts = _read_by_scripts(changes, layouts, index_of)
    result.info["base"] = {"ref": req.base, "merge-base": changes.base,
                           "changed-files": sorted(changes.files), "traced-keys": {}}
    if (not head_masters and not req.configs) or \
            not (changes.read_touched or _can_select(changes, layouts, head_masters)):
        # no row at the head (no master configs: the config check says so), or no
        # changed file a row can read
        _nothing_changed(result, started)
        return None
    at_base = base_files(root, changes.base, base_layout.config_dir + "/", reader=req.git)
    if scope is None and req.config_keys is None:
        scope = _change_scope(changes, layouts, head_masters,
                              {p: at_base[p] for p in base_layout.masters if p in at_base})
        if scope is not None and changes.read_touched:  # rows their reads tie to it
            scope |= {changes.read_map.keys[r] for r in changes.read_touched}
        if scope is not None:
            result.info["base"]["scope"] = sorted(scope)
    _runner_changes(root, changes, at_base.get(base_layout.runners), layout)
    base_cfgs, prefixes = _base_configs(root, at_base, base_layout, layout, scope)
    store = _base_store(req, changes.trusted or changes.base, result, prefixes)
    return _Change(changes, layout, base_cfgs, store, scope)


def check(req: CheckRequest, *, store: CurveStore | None = None) -> Checked:
    """The check; ``store``: judge with these curves instead of the repository's own
    (the base side of the difference rule, :func:`_standing`)."""
    started = time.monotonic()
    root = req.root
    if not root.is_dir():
        raise InputError(f"{root}: not a directory", hint="pass --root REPO")
    result = Result("policy check")
    change: _Change | None = None
    made: list[RepoIndex] = []

    def index_of(changed: Iterable[str] = (),
                 modelled: Callable[[str], bool] | None = None) -> RepoIndex:
        """The checkout's index, made once (``changed``: PR mode's changed files,
        ``modelled``: the files the check judges by their role; given by the first
        call)."""
        if not made:
            made.append(RepoIndex(root, changed=changed, modelled=modelled))
        return made[0]

    if req.base is not None:
        change = _change(req, result, started, index_of)
        if change is None:
            return Checked(result, [], None)
        layout, store, scope = change.layout, change.store, change.scope
    else:
        layout, scope = layout_of(root), _scope(req)
        store = store or open_store(req.registry, req.curves_dir, root=root)
    result.extend(store.findings)
    result.extend(store.check_rows(require_files=False))
    configs, files = _configs(req, result, scope, layout)
    result.checked.extend(files)
    if configs is None:
        return Checked(_finish(result, store, [], {}, started, req), [], store)
    runners = _runners(root, result, layout)
    wf = _workflows(root)
    rows, spec_keys, refused = _rows(req, configs, runners, result)
    index = index_of()
    if change is None:
        _refused(refused, configs, None, result)
        jobs, malformed = _jobs(req, rows, runners, wf, result)
    else:
        jobs, malformed = _selected(req, change, rows, runners, wf, refused, configs, index,
                                    result)
    spec_keys = {k: v for k, v in spec_keys.items() if k not in refused}
    _environment(jobs, result)
    jobs, unmodeled = _modeled(jobs)
    outcomes: list[RowOutcome] = [*malformed, *unmodeled]
    untraced = list(outcomes)
    sources: dict[str, str] = {}
    record = _recording(req, change)
    outcomes.extend(_trace_jobs(req, jobs, index, store, sources, result, record))
    if record is not None:
        _record_read_map(req, rows, record, untraced, result)
    if change is not None:
        viewed = _in_base_job_view(req, change.changes, layout,
                                   [j for j in jobs if id(j) in change.view], outcomes,
                                   store, result)
        traced_keys = {o.row.key for o in outcomes}
        spec_keys = {k: v for k, v in spec_keys.items() if k in traced_keys}
        _standing(req, change, [*outcomes, *viewed], store, result)
        result.extend(_reported(viewed, result))
    _coverage(spec_keys, outcomes, result)
    return Checked(_finish(result, store, outcomes, sources, started, req), outcomes, store)


def _verdict_id(o: RowOutcome, v: Verdict) -> tuple[str, ...]:
    """What makes a row's verdict the same verdict at the base and at the head: the
    row (key, search-space entry, mode, runner family — not the concentration the check
    samples), the rule, the file and the message without line numbers, the note of the
    view that gave it (:data:`BASE_VIEW`) or a failed trace's stdout lines."""
    from inferencex_tools.policy.check import STDOUT_PART
    from inferencex_tools.report.adopt import identity

    msg = v.message
    for part in (" (" + BASE_VIEW.split("{", 1)[0], STDOUT_PART):
        cut = msg.find(part)
        msg = msg[:cut] if cut >= 0 else msg
    ident = identity(Finding(v.rule.id, v.rule.severity, v.file, None, None, msg))
    return (o.row.key, o.row.entry_label(), str(o.row.eval_only), o.family or "",
            v.rule.id, v.file, ident)


def _standing(req: CheckRequest, change: _Change, outcomes: list[RowOutcome],
              store: CurveStore, result: Result) -> None:
    """--base, the difference rule: an error verdict of a selected row that the same
    row also has in the full check of the base (the merge-base's files, workflows,
    launchers and settings, judged against the same curves) is not the change's.  It
    moves to :attr:`RowOutcome.standing` (reported as a note, "already on main"); the
    others stay errors.  Only the keys with an error are checked at the base; a key the
    base does not have has no standing verdict."""
    import tempfile
    from collections import Counter

    from inferencex_tools.policy.base import materialize_commit
    from inferencex_tools.report.findings import Severity

    def errors(o: RowOutcome) -> list[Verdict]:
        return [v for v in o.verdicts if v.rule.severity is Severity.ERROR]

    keys = sorted({o.row.key for o in outcomes if errors(o)} & set(change.base_cfgs))
    if not keys:
        return
    with tempfile.TemporaryDirectory(prefix="ixtool-base-tree-") as tmp:
        view = Path(tmp)
        materialize_commit(req.root, change.changes.base, view, reader=req.git)
        breq = replace(req, root=view, configs=None, config_keys=keys, base=None, head=None,
                       git=None, keys_are_change=False, progress=None)
        try:
            base = check(breq, store=store)
        except (InputError, UsageError):
            return  # the base cannot be checked for these keys: every error is the change's
    known = Counter(_verdict_id(o, v) for o in base.outcomes for v in errors(o))
    n = 0
    for o in outcomes:
        for v in errors(o):
            vid = _verdict_id(o, v)
            if known[vid] > 0:
                known[vid] -= 1
                o.verdicts.remove(v)
                o.standing.append(v)
                n += 1
    result.info["base"]["already-on-main"] = {
        "merge-base": change.changes.base, "keys": keys, "verdicts": n,
        "traces": base.result.info.get("traces", 0)}
    result.info["traces"] = result.info.get("traces", 0) + base.result.info.get("traces", 0)


def _selected(req: CheckRequest, change: _Change, rows: list[Row], runners: Any, wf: Any,
              refused: dict[str, str], configs: Any, index: RepoIndex, result: Result
              ) -> tuple[list[Job], list[RowOutcome]]:
    """--base: the jobs of the rows the change can reach (and why, in ``info.base``)."""
    from inferencex_tools.policy.base import WORKFLOWS

    changes, base_cfgs = change.changes, change.base_cfgs
    changed_prefixes = _curve_changes(req, changes, change.store, result)
    base_wf = _base_workflows(req.root, changes, req.git) if changes.any_under(
        (WORKFLOWS,)) else None
    buckets = _changed_buckets(base_wf, wf) if changes.any_under((WORKFLOWS,)) \
        else frozenset()
    rows = _candidates(req, rows, runners, index, changes, base_cfgs, changed_prefixes,
                       buckets)
    _refused(refused, configs, _refused_in_change(refused, configs, changes, base_cfgs,
                                                  changed_prefixes), result)
    jobs, malformed = _jobs(req, rows, runners, wf, result,
                            functools.partial(_launcher_may_change, changes, base_cfgs),
                            functools.partial(_relabelled, changes, base_cfgs))
    jobs, why = _relevant(req, jobs, index, changes, base_cfgs, changed_prefixes, base_wf, wf,
                          change.view, runners)
    result.info["base"]["traced-keys"] = why
    return jobs, malformed


BASE_VIEW = ("traced with the base revision's {files}, as the PR's sweep runs it (its "
             "row job runs the base's workflows and launchers; the PR's own take effect "
             "after merge)")


def _in_base_job_view(req: CheckRequest, changes: Any, layout: Layout, jobs: list[Job],
                      outcomes: list[RowOutcome], store: CurveStore, result: Result
                      ) -> list[RowOutcome]:
    """--base, when the change edits the job view (workflows, launchers under
    ``runners/``, runners.yaml's nodes): the rows just traced with the head's are traced
    again with the base revision's — what the PR's own sweep runs — and judged against
    the same curves.  Verdicts the head's view did not give are findings too, each
    saying which view gave it: a launcher or workflow the PR edits can make the traced
    launch differ from the measured one, and the worse verdict counts.  A row whose
    family has no launcher at the base is left to the head's view (a new runner family
    runs once the launcher is on the default branch)."""
    import tempfile
    from dataclasses import replace as copy

    from inferencex_tools.policy.base import job_view_files, materialize_job_view

    edited = job_view_files(changes)
    rows = list({id(j.row): j.row for j in jobs}.values())
    if not edited or not rows:
        return []
    scratch = Result("policy check")
    with tempfile.TemporaryDirectory(prefix="ixtool-base-job-view-") as tmp:
        view = Path(tmp)
        materialize_job_view(req.root, changes.trusted or changes.base, layout.runners, view,
                             reader=req.git)
        rows, vwf = _run_in_base_view(rows, _workflows(view))
        if not rows:
            return []
        vreq = copy(req, root=view, progress=None)
        vjobs, _ = _jobs(vreq, rows, _runners(view, scratch, layout), vwf, scratch)
        vjobs, _ = _modeled(vjobs)
        traced = _trace_jobs(vreq, vjobs, RepoIndex(view, changed=changes.files), store, {},
                             scratch)
    seen = {(o.row.key, v.rule.id, v.file, v.line, v.message) for o in outcomes
            for v in o.verdicts}
    note = BASE_VIEW.format(files=", ".join(edited[:4]) + (" …" if len(edited) > 4 else ""))
    for o in traced:
        o.verdicts = [copy(v, message=f"{v.message} ({note})") for v in o.verdicts
                      if (o.row.key, v.rule.id, v.file, v.line, v.message) not in seen]
    result.info["base-job-view"] = {"files": edited, "rows": len(rows),
                                    "traces": scratch.info.get("traces", 0)}
    result.info["traces"] = result.info.get("traces", 0) + scratch.info.get("traces", 0)
    # the scratch result's own findings (a launcher missing at the base, the sandbox's
    # strength) are the head's view's to report
    return traced


def _run_in_base_view(rows: list[Row], wf: Any) -> tuple[list[Row], Any]:
    """The rows a PR's sweep runs in the base's job view, and the base's workflows as that
    sweep uses them.  A row the base dispatches from a ``pull_request`` workflow runs with
    the PR merge ref's workflows and launchers (the head's view, traced already), so its
    base templates are no launch anyone makes: it is dropped — unless the base also has
    ixtool's row job (``sweep-shard.yml``, run from the default branch), which runs it
    with the base's launcher and ``ixtool ci row``'s environment.  Other dispatches (a
    workflow started from the default branch) keep the base's templates.  A row of a
    bucket the base dispatches nowhere (one the PR adds: real head #1201's
    ``single_node.agentic``) is no launch of the base's workflows either: dropped too,
    unless the row job runs it."""
    from dataclasses import replace as copy

    from inferencex_tools.workflow import bucket_of

    if wf is None:
        return rows, wf
    merge_ref = {b for b, d in wf.dispatches.items() if d.from_merge_ref}
    if not wf.row_job:  # a bucket the base does not dispatch runs nowhere before merge
        rows = [r for r in rows
                if not r.matrix or bucket_of(r.matrix) in wf.dispatches.keys() - merge_ref]
    if not merge_ref:
        return rows, wf
    return rows, copy(wf, dispatches={b: d for b, d in wf.dispatches.items()
                                      if b not in merge_ref})


def _read_proofs(req: CheckRequest, changes: Any, result: Result) -> None:
    """--base with a trace cache: the base tree's read map (policy/readmap.py), and the
    rows of it the change reaches, on ``changes``; ``info["read-map"]`` says which."""
    if req.trace_cache is None:
        return
    from inferencex_tools.io.gitcat import GitReader
    from inferencex_tools.policy import readmap

    reader = req.git or GitReader(req.root)
    try:
        tree = reader.tree(changes.base)
        got = readmap.load(req.trace_cache, tree)
        if got is None:
            result.info["read-map"] = {"tree": tree, "found": False}
            return
        shape = readmap.change_shape(req.root, changes.files, reader.paths(changes.base),
                                     reader.paths(req.head) if req.head else None)
    finally:
        if req.git is None:
            reader.close()
    changes.read_map = got
    changes.read_touched = got.touched(shape)
    result.info["read-map"] = {
        "tree": tree, "found": True, "rows": len(got.rows),
        "unknown": sum(1 for r in got.rows.values() if r is None),
        "reached": len(changes.read_touched)}


def _recording(req: CheckRequest, change: Any) -> list[tuple[Any, set[str]]] | None:
    """Where a check of every row (no --base, --config-keys, --configs) with a writable
    trace cache notes each job's traces for its read map; None: no map is kept."""
    keep = change is None and req.trace_cache is not None and req.trace_cache_write and \
        req.config_keys is None and req.configs is None
    return [] if keep else None


def _map_knows_every_row(changes: Any) -> bool:
    """Does the base's read map know every row of the base?  Then the static reach of
    data files is not needed: a row of the base is selected by what its launch read, and
    a row the map does not have differs from the base's in its config block or runner
    label, which select it on their own."""
    m = changes.read_map
    return m is not None and all(r is not None for r in m.rows.values())


def _record_read_map(req: CheckRequest, rows: list[Row], traced: list[tuple[Any, set[str]]],
                     untraced: Iterable[RowOutcome], result: Result) -> None:
    """The whole check with a writable trace cache, on a clean checkout: keep its read
    map (policy/readmap.py) for the gates whose merge-base is this tree (a row with a
    job ``untraced`` is unknown)."""
    from inferencex_tools.policy import readmap

    tree = _clean_tree(req.root, result)
    if tree is None or req.trace_cache is None:
        return
    m = _row_reads(req.root, rows, traced, untraced)
    readmap.save(req.trace_cache, tree, m)
    result.info["read-map"] = {"tree": tree, "rows": len(m.rows),
                               "unknown": sum(1 for v in m.rows.values() if v is None)}


def _clean_tree(root: Path, result: Result) -> str | None:
    """The checkout's HEAD tree when the checkout is that tree (nothing uncommitted)."""
    from inferencex_tools.errors import GitError
    from inferencex_tools.io.gitcat import GitReader

    try:
        with contextlib.closing(GitReader(root)) as reader:
            if reader.uncommitted():
                result.info["read-map"] = "not kept: the checkout has uncommitted changes"
                return None
            return reader.tree("HEAD")
    except (GitError, InputError, OSError):
        return None


def _job_known(jt: Any) -> bool:
    """Can a job's reads be known from its traces?  Not without a launcher trace, with a
    script found by the naming rule, or with a verdict that comes from no trace (a
    missing script or recipe: ixtool looked for it)."""
    return not (jt.launcher is None or (jt.fallback and jt.static is None) or
                (jt.trace is None and jt.submission is None and jt.stopped is None))


def _row_reads(root: Path, rows: list[Row], traced: list[tuple[Any, set[str]]],
               untraced: Iterable[RowOutcome]) -> Any:
    """The read map of ``rows`` from their jobs' traces (policy/readmap.py)."""
    from inferencex_tools.policy import readmap

    ids = {id(r): readmap.row_id(r.key, r.matrix, r.eval_only) for r in rows}
    reads: dict[str, readmap.RowReads | None] = dict.fromkeys(ids.values())
    keys = {ids[id(r)]: r.key for r in rows}
    known: dict[str, readmap.RowReads] = {}
    bad = {ids[id(o.row)] for o in untraced if id(o.row) in ids}
    for jt, judged in traced:
        rid = ids.get(id(jt.job.row))
        if rid is None:
            continue
        traces = [t for t in (jt.launcher, jt.trace, jt.stopped, jt.static) if t is not None]
        rr = known.setdefault(rid, readmap.RowReads())
        if not _job_known(jt) or not readmap.known_reads(
                traces, [*judged, *filter(None, [jt.script])], root, rr):
            bad.add(rid)
    reads.update({rid: rr for rid, rr in known.items() if rid not in bad})
    return readmap.ReadMap(reads, keys)


def _trace_jobs(req: CheckRequest, jobs: list[Job], index: RepoIndex, store: CurveStore,
                sources: dict[str, str], result: Result,
                record: list[tuple[Any, set[str]]] | None = None) -> list[RowOutcome]:
    """The two trace stages for ``jobs`` in one session, and their outcomes (``record``:
    gets each job's trace and the files its judging read)."""
    outcomes: list[RowOutcome] = []
    result.info["traces"] = result.info["unique-traces"] = 0
    if not jobs:
        result.info["isolation"] = "none needed"  # nothing traced: no sandbox probed
        return outcomes
    from inferencex_tools.policy.outcomes import fallback_note, outcome, read_from
    from inferencex_tools.sandbox import Session

    with Session(req.root, isolate=req.isolate, allow_unsandboxed=req.allow_unsandboxed,
                 limits=req.limits, clients=index.clients(),
                 cache=_cache_of(req, result)) as session:
        runner = Runner(session, index, timeout=req.timeout, jobs=req.jobs,
                        progress=req.progress)
        traced = _fallbacks(runner.run(jobs), runner, req)
        read = read_from(session.repo)

        def judge(jt: JobTrace) -> tuple[RowOutcome, set[str]]:
            judged: set[str] = set()
            o = outcome(jt, store, _noting(read, judged) if record is not None else read,
                        sources)
            if jt.fallback:
                o.verdicts.append(fallback_note(jt))
            return o, judged

        done = [judge(jt) for jt in traced]
        again = [i for i, jt in enumerate(traced) if _reused_failure(jt, done[i][0])]
        if again:  # a reused trace must not carry a failure another run may not have
            session.reuse = False
            fresh = _fallbacks(runner.run([traced[i].job for i in again]), runner, req)
            for i, jt in zip(again, fresh, strict=True):
                traced[i], done[i] = jt, judge(jt)
            result.info["traced-again"] = len(again)
        outcomes.extend(o for o, _ in done)
        if record is not None:
            record.extend((jt, judged) for jt, (_, judged) in zip(traced, done, strict=True))
        result.info["traces"] = runner.traces
        result.info["unique-traces"] = runner.unique
        result.info["stages"] = runner.stages
        result.info["isolation"] = session.isolation
        if session.isolation == "basic":
            result.add(SANDBOX_WEAK.at(jobs[0].launcher or "?", None, None,
                                       f"{runner.traces} trace(s) ran without isolation "
                                       "(neither user namespaces nor bubblewrap available)"))
    return outcomes


def run_check_incremental(root: Path, *, base: str | None, head: str | None = None
                          ) -> Result:
    """The policy check of a change (``ixtool ci gate``): the rows whose inputs differ
    between the merge-base of ``base`` and ``head`` (the checkout at ``root`` is
    ``head``), judged against the base's curves; the whole check without a base."""
    return run_check(CheckRequest(root=root, base=base, head=head if base else None))


# verdicts that say the trace did not do what the job does: a reused trace giving one
# is traced again (a result kept by the trace cache must not make a failure stick)
_TRACE_FAILURES = frozenset({"PO301", "PO302", "PO310"})


def _reused_failure(jt: JobTrace, o: RowOutcome) -> bool:
    return any(t is not None and t.cached for t in (jt.launcher, jt.trace, jt.static)) and \
        any(v.rule.id in _TRACE_FAILURES for v in o.verdicts)


def _noting(read: Callable[[str], str | None], seen: set[str]
            ) -> Callable[[str], str | None]:
    def noted(path: str) -> str | None:
        seen.add(path)
        return read(path)
    return noted


def _read_all(root: Path, paths: Iterable[str]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for p in paths:
        try:
            out[p] = read_bytes(root / p)
        except InputError:
            continue
    return out


def _nothing_changed(result: Result, started: float) -> Result:
    """--base when no changed file is one any row reads: nothing to trace."""
    result.info.update({"rows": [], "traces": 0, "unique-traces": 0,
                        "isolation": "none needed", "job-environment": None,
                        "registry": None, "sources": {},
                        "seconds": round(time.monotonic() - started, 2)})
    return result


def _layouts(root: Path, commit: str, reader: Any) -> tuple[Layout, Layout]:
    """The layouts of ``commit`` and of the checkout, both located by ``commit``'s
    workflows and settings: a change cannot point the check at other files than its base
    names (docs/security.md); through ``reader``, else a reader of its own."""
    from inferencex_tools.io.gitcat import GitReader
    from inferencex_tools.io.layout import layout_at, rules_at

    own = GitReader(root) if reader is None else None
    git = reader if reader is not None else own
    try:
        rules = rules_at(git, commit)
        return layout_at(git, commit, rules=rules), layout_of(root, rules=rules)
    finally:
        if own is not None:
            own.close()


def _base_configs(root: Path, base_files: dict[str, bytes], base: Layout, head: Layout,
                  scope: set[str] | None = None) -> tuple[dict[str, Any], Container[str]]:
    """The base's master configs merged (a file that does not load is left out) and
    their model prefixes.  A file is parsed relative to the checkout's copy (the file of
    the same name in the checkout's config folder): blocks the change left alone are the
    checkout's parse (which the check makes anyway), only the others are parsed.  With
    ``scope`` only those keys' blocks are parsed, and the model prefixes are looked up
    block by block as the curves ask for them.  ``base_files``: the base's files in its
    config folder."""
    from inferencex_tools.sweep import blocks as B

    files = [(p, data) for p, data in base_files.items() if p in base.masters]
    if scope is not None:
        out = _scoped_configs(files, scope, complete=False)  # a new key: not at the base
        if out is not None:
            return out.data, B.FieldValues(files, "model-prefix")
    full = _parsed_like_checkout(root, files, head.config_dir)
    return full, B.field_values(full.values(), "model-prefix")


def _runner_changes(root: Path, changes: Any, base: bytes | None, head: Layout) -> None:
    """Which runner labels' ``runners.yaml`` entries differ between the base (``base``:
    its runners.yaml, wherever its layout keeps it) and the checkout (``changes``)."""
    from inferencex_tools.policy.base import runner_label_changes

    changes.runners = head.runners
    here = root / head.runners
    try:
        now = read_bytes(here) if here.is_file() else None
    except InputError:
        now = None
    if now == base:
        return
    changes.runner_labels = runner_label_changes(base, now)


def _parsed_like_checkout(root: Path, files: list[tuple[str, bytes]], folder: str
                          ) -> dict[str, Any]:
    from inferencex_tools.sweep.blocks import parse_like

    out: dict[str, Any] = {}
    for path, data in files:
        here = root / folder / path.rsplit("/", 1)[-1]
        try:
            head = read_bytes(here) if here.is_file() else None
        except InputError:
            head = None
        try:
            doc = parse_like(data, path, head, path)
        except InputError:
            continue
        if isinstance(doc, dict):
            out.update(doc)
    return out


def _fallbacks(traced: list[JobTrace], runner: Runner, req: CheckRequest) -> list[JobTrace]:
    """Single-node jobs whose launcher did not reach its step: resolve the script by the
    launcher naming rule and trace it with the job's environment."""
    runner.submit_statically([jt for jt in traced if jt.job.row.multinode
                              and jt.submission is None and jt.trace is None])
    todo = [jt for jt in traced if jt.trace is None and jt.submission is None
            and jt.step is None and jt.stopped is None and not jt.job.row.multinode]
    if not todo:
        return traced
    from inferencex_tools.workflow.step import Step

    for jt in todo:
        res = _resolve(req, jt.job.row, jt.job.family)
        if res.script is None:
            jt.missing = res.why or "no benchmark script"
            continue
        jt.step = Step("launcher-rule", ["bash", res.script], res.script, dict(jt.job.env),
                       None, [], False)
        jt.script = res.script
        jt.fallback = True
    runner.run_scripts([jt for jt in todo if jt.fallback])
    return traced


def _coverage(spec_keys: dict[str, tuple[str, int | None]], outcomes: list[RowOutcome],
              result: Result) -> None:
    """Every spec-decoding key gets a verdict; PO308 says why one did not."""
    by_key: dict[str, list[RowOutcome]] = defaultdict(list)
    for o in outcomes:
        by_key[o.row.key].append(o)
    reported = {k for f in result.errors for k in f.data.get("config_keys", [])}
    for key, (file, line) in spec_keys.items():
        if key in reported:
            continue
        os_ = [o for o in by_key.get(key, []) if o.row.spec != "none"]
        judged = [o for o in os_ if o.facts or any(v.rule.severity.value == "error"
                                                   or v.rule is NOT_CHECKED
                                                   for v in o.verdicts)]
        if judged:
            continue
        reasons = dict.fromkeys(o.unchecked for o in os_ if o.unchecked)
        if not os_:
            reasons = {"no row of this key could be traced (no launcher or no rows)": None}
        result.add(NOT_CHECKED.at(
            file, line, 1, f"{key}: not checked: " + "; ".join(r for r in reasons if r),
            data={"config_keys": [key], "rows": [o.row.ref() for o in os_]}))


ALREADY = ("already on main: the base ({base}) has it in the same row — not this "
           "change's")


def _reported(outcomes: list[RowOutcome], result: Result) -> list[Finding]:
    """The findings of ``outcomes``: their verdicts, and their standing ones as notes
    that say the base has them too (:func:`_standing`)."""
    from inferencex_tools.report.findings import Severity

    out = aggregate(outcomes)
    standing = [replace(o, verdicts=o.standing) for o in outcomes if o.standing]
    if standing:
        base = str(result.info["base"]["already-on-main"]["merge-base"])[:12]
        out.extend(replace(f, severity=Severity.NOTE,
                           message=f"{f.message} ({ALREADY.format(base=base)})",
                           data={**f.data, "already-on-main": base})
                   for f in aggregate(standing))
    return out


def _finish(result: Result, store: CurveStore, outcomes: list[RowOutcome],
            sources: dict[str, str], started: float, req: CheckRequest) -> Result:
    result.extend(_reported(outcomes, result))
    for o in outcomes:
        if o.static:
            result.add(STATIC_ONLY.at(o.script or "?", None, None,
                                      f"{o.row.key}: {'; '.join(o.notes)}",
                                      data={"config_keys": [o.row.key],
                                            "rows": [o.row.ref()]}))
    _dedupe_notes(result)
    for f in list(result.findings):
        if "config_keys" not in f.data:
            result.findings[result.findings.index(f)] = Finding(
                f.rule, f.severity, f.file, f.line, f.column, f.message, f.hint,
                {**f.data, "config_keys": [], "rows": []})
    result.info["rows"] = [row_summary(o) for o in outcomes]
    result.info["seconds"] = round(time.monotonic() - started, 2)
    result.info["registry"] = {"file": store.registry.file, "version": store.registry.version,
                               "source": store.source}
    result.info["sources"] = sources
    return result


def _dedupe_notes(result: Result) -> None:
    seen: set[tuple[str, str, str]] = set()
    out: list[Finding] = []
    for f in result.findings:
        if f.rule == STATIC_ONLY.id:
            k = (f.rule, f.file, f.message.split(":", 1)[0])
            if k in seen:
                continue
            seen.add(k)
        out.append(f)
    result.findings = out


def row_summary(o: RowOutcome) -> dict[str, Any]:
    from inferencex_tools.sweep.arms import arm_label

    f = o.facts[0] if o.facts else None
    errors = sorted({v.rule.id for v in o.verdicts if v.rule.severity.value == "error"})
    verdict = "FAIL " + ",".join(errors) if errors else \
        ("not checked" if o.unchecked else ("ok" if o.facts else "no launch"))
    return {
        "config-key": o.row.key,
        "entry": o.row.entry_label(),
        "arm": arm_label(o.row.matrix or {**o.row.entry, **o.row.seq}),
        "conc": o.row.conc,
        "mode": "eval" if o.row.eval_only else "throughput",
        "multinode": o.row.multinode,
        "family": o.family,
        "script": o.script,
        "launch": f.summary() if f else ("not checked" if o.unchecked else "no server"),
        "server": bool(o.facts),  # the trace (or the submitted recipe) reached a server
        "source": "static" if o.static else (o.trace.isolation if o.trace else None),
        "thinking": o.thinking,
        "registry-row": o.registry_row,
        "expected": o.expected,
        "trace-seconds": round(o.trace.seconds, 2) if o.trace else None,
        "verdict": verdict,
        "why-unchecked": o.unchecked,
    }


def render_selection(base: Mapping[str, Any] | None) -> str:
    """``policy check --explain``: the changed files and, per traced key, what reaches its
    launch (``info.base``); without ``--base`` every row is traced."""
    if not base:
        return "selection: no --base, every row is traced\n"
    files = list(base.get("changed-files") or [])
    lines = [f"selection against {str(base.get('merge-base'))[:12]}: "
             f"{len(files)} changed file(s)", *(f"  changed {f}" for f in files)]
    if base.get("scope") is not None:
        lines.append("  only config blocks can select rows: "
                     + (", ".join(base["scope"]) or "none differ"))
    traced = base.get("traced-keys") or {}
    if not traced:
        lines.append("  no key traced: no changed file reaches a row's launch")
    for key, why in traced.items():
        lines += [f"  traced {key}:", *(f"    {w}" for w in why)]
    return "\n".join(lines) + "\n"


def aggregate(outcomes: list[RowOutcome]) -> list[Finding]:
    """One finding per (rule, place, message), naming every row it applies to, with the
    rows and config keys also as data (``data.config_keys``, ``data.rows``)."""
    groups: dict[tuple[str, str, int | None, str],
                 tuple[Verdict, dict[str, list[int]], list[dict[str, Any]]]] = {}
    for o in outcomes:
        label = f"{o.row.key} [{o.row.entry_label()} {'eval' if o.row.eval_only else 'tput'}]"
        for v in o.verdicts:
            k = (v.rule.id, v.file, v.line, v.message)
            if k not in groups:
                groups[k] = (v, defaultdict(list), [])
            concs = groups[k][1][label]
            ref = {**o.row.ref(), "family": o.family}
            if ref not in groups[k][2]:
                groups[k][2].append(ref)
            if o.row.conc not in concs:
                concs.append(o.row.conc)
    out: list[Finding] = []
    for v, rows, refs in groups.values():
        where = "; ".join(f"{lbl} conc {','.join(map(str, cs))}" for lbl, cs in rows.items())
        data: dict[str, Any] = {"config_keys": sorted({r["key"] for r in refs}), "rows": refs}
        data.update(dict(v.data))
        out.append(v.rule.at(v.file, v.line, 1 if v.line else None,
                             f"{v.message} — {where}", hint=v.hint, data=data))
    return out


def render_rows(rows: list[dict[str, Any]]) -> str:
    """The verdict table (text) for ``--rows``."""
    out = []
    for r in rows:
        out.append(f"{r['verdict']:<10} {r['config-key']} [{r['entry']} conc={r['conc']} "
                   f"{r['mode']}] {r['family'] or ''} {r['script']} ({r['source']}): "
                   f"{r['launch']}"
                   + (f"; {r['thinking']}; {r['registry-row']} golden {r['expected']}"
                      if r['expected'] else ""))
    return "\n".join(out) + ("\n" if out else "")


# ------------------------------------------------------------------------- other commands

CONTAINER_WORKSPACE = "/workspace"  # where the launchers mount the checkout


def trace_report(root: Path, script: str, assignments: list[str], *,
                 timeout: float) -> dict[str, Any]:
    """``ixtool policy trace``: one script, the given variables, what it launched."""
    from inferencex_tools.policy.check import failure_message, stopped_message
    from inferencex_tools.policy.engines import engine_of, facts_of

    if not (root / script).is_file():
        raise InputError(f"{root / script}: no such script", hint="SCRIPT is relative to --root")
    env: dict[str, str] = {}
    for a in assignments:
        name, eq, value = a.partition("=")
        if not eq or not name.isidentifier():
            raise UsageError(f"--set expects VAR=VALUE, got {a!r}",
                             hint="e.g. --set CONC=64")
        env[name] = value
    from inferencex_tools.policy.pipeline import RepoIndex
    from inferencex_tools.sandbox import Session

    # the checkout is also where the launchers mount it in the container (/workspace):
    # the library's helpers write and check the server log there
    with Session(root, clients=RepoIndex(root).clients()) as session:  # (as the check)
        tr = session.trace(script, env, timeout=timeout, workspace_at=[CONTAINER_WORKSPACE])
    launches = []
    for rec in tr.records:
        eng = engine_of(rec)
        item: dict[str, Any] = {"tool": rec.tool, "argv": list(rec.argv)}
        extra = {k: v for k, v in rec.env.items()
                 if k not in env and k not in ("PATH", "HOME", "PWD", "LANG", "TMPDIR")}
        if extra:
            item["env-set-by-script"] = extra
        if eng:
            f = facts_of(rec, eng)
            item["engine"] = eng
            item["facts"] = {"summary": f.summary(), "method": f.method, "draft": f.draft,
                             "k": f.k, "synthetic": f.synthetic, "al": f.al, "raw": f.raw,
                             "issues": f.issues}
        launches.append(item)
    rep: dict[str, Any] = {
        "script": script, "isolation": tr.isolation, "returncode": tr.returncode,
        "timed_out": tr.timed_out, "stopped_by": tr.stopped_by, "seconds": round(tr.seconds, 2),
        "last_line": tr.last_line, "events": tr.events, "records": launches,
        "stderr_tail": tr.stderr_tail[-2000:]}
    if tr.stopped_by is not None:
        rep["failure"] = stopped_message(tr)[0]
    elif not tr.ok:
        rep["failure"] = failure_message(tr)[0]
    return rep


def run_curves(root: Path, registry: Path | None, curves_dir: Path | None) -> Result:
    """``ixtool policy curves``: every curve file validates; registry and files agree."""
    store = open_store(registry, curves_dir, root=root)
    result = Result("policy curves")
    result.extend(store.findings)
    files = sorted(p for p in store.curves_dir.glob("*.yaml") if p.name != "registry.yaml")
    for p in files:
        store.curve(p.name)  # loads and validates; findings collect in the store
    result.extend(f for f in store.findings if f not in result.findings)
    result.extend(store.check_rows(require_files=False))
    named = {e.curve for e in store.registry.entries}
    ambiguous = {f for fs in store.registry.ambiguous.values() for f in fs}
    for p in files:
        if p.name not in named and p.name not in ambiguous:
            shown = f"{store.display_dir}/{p.name}" if store.display_dir else p.name
            result.add(REGISTRY_INVALID.at(
                store.registry.file, None, None,
                f"the registry does not cover {shown}: add a row naming it "
                "(model-prefix, method, draft, curve, model-key)"))
    result.checked = [store.registry.file, *(p.name for p in files)]
    result.info["registry"] = {"file": store.registry.file, "version": store.registry.version,
                               "rows": len(store.registry.entries), "source": store.source}
    return result


@dataclass
class InitResult:
    path: Path
    text: str
    findings: list[Finding]
    written: bool


def run_init(root: Path, *, curves_dir: Path | None, output: Path | None,
             force: bool) -> InitResult:
    """``ixtool policy init``: write the registry derived from the repository, for review."""
    from inferencex_tools.policy.store import derive_from_tree

    if curves_dir is not None and not (root / curves_dir).is_dir():
        raise InputError(f"{curves_dir}: no such directory",
                         hint="--curves-dir is the directory of the curve files, "
                         "relative to --root")
    target = output if output is not None else root / DEFAULT_REGISTRY
    if target.exists() and not force:
        raise UsageError(f"{target} exists (an explicit registry wins over derivation)",
                         hint="pass --force to overwrite it, or --output FILE")
    store = derive_from_tree(root, curves_dir)
    text = store.derived.to_yaml()
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, text.encode())
    return InitResult(target, text, list(store.findings), True)
