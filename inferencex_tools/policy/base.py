"""``policy check --base REF``: what changed against the base, and what it touches.

The working tree is compared with the merge-base of ``REF`` and ``HEAD`` by git blob
hashes (computed here, so no diff driver, textconv or attribute can change the
answer).  A row is traced only when something it depends on changed:

* its config block (the key's parsed value in the master configs);
* the launcher of one of its runner families, or anything the launcher sources or
  names (``runners/slurm_utils.sh``, ``runners/inject_synthetic_acceptance.py`` …);
* the benchmark script its family's naming rule resolves to, with what it sources —
  for a shell file that exists on both sides, only when its top level changed or a
  function whose body changed is named in the text the row's launcher or script can
  reach (:class:`ShellDelta`);
* the recipes its multi-node settings name (``CONFIG_FILE``, ``EVAL_CONFIG_FILE``);
* the curve or registry its model prefix uses;
* the workflows, for the rows whose job they change (its launcher or a variable of its
  environment differs from the job the base's workflows give the same row);
* the entry of its runner label in ``configs/runners.yaml`` (the label's nodes or
  hardware): a job reads only its own label's; a change anywhere else in the file (or
  a file that does not load) selects every row.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferencex_tools.io.gitcat import GitReader

SKIP = (".git",)
WORKFLOWS = ".github/workflows/"
RUNNERS_FILE = "configs/runners.yaml"


def blob_sha(data: bytes) -> str:
    h = hashlib.sha1(usedforsecurity=False)
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


@dataclass
class Changes:
    base: str  # the merge-base commit the working tree is compared with
    files: set[str] = field(default_factory=set)  # added, modified or deleted paths
    # runner labels whose runners.yaml entry (nodes, hardware) changed; None: every label
    runner_labels: set[str] | None = field(default_factory=set)
    runners: str = "configs/runners.yaml"  # the checkout's runners.yaml (its layout)
    # the revision ``ref`` itself: its curves and registry judge (``base`` is only where
    # the change forked, any earlier commit of it the PR chose)
    trusted: str = ""
    # changed files other than scripts that a script of the checkout names (data a
    # recipe reads at run time: they select the rows whose closure names them)
    read_by_scripts: set[str] = field(default_factory=set)
    # those of them a data file the scripts name can name (a list a script reads names
    # from): only then do rows follow the names their data hold (``files_listed``)
    listed_by_data: set[str] = field(default_factory=set)
    # the base tree's read map (policy/readmap.py; None: none in the trace cache) and
    # the rows of it the change reaches (row id → the changed paths that reach it)
    read_map: Any = None
    read_touched: dict[str, set[str]] = field(default_factory=dict)

    def proof(self, row: Any) -> set[str] | None:
        """What the base's read map says of ``row``: the changed paths that reach what its
        launch read (empty: none does), or None when the map does not know the row."""
        if self.read_map is None:
            return None
        from inferencex_tools.policy.readmap import row_id

        rid = row_id(row.key, row.matrix, row.eval_only)
        if self.read_map.rows.get(rid) is None:
            return None
        return self.read_touched.get(rid, set())

    def any_under(self, prefixes: Iterable[str]) -> bool:
        ps = tuple(prefixes)
        return any(f.startswith(ps) for f in self.files)


def changed_files(root: Path, ref: str, head: str | None = None, *,
                  reader: GitReader | None = None) -> Changes:
    """Paths that differ between the merge-base of ``ref`` and HEAD (or ``head``) and the
    working tree (or, with ``head``, that commit).  ``reader``: an open reader of the
    repository at ``root`` to use (and leave open) instead of a new one."""
    own = reader is None
    reader = reader or GitReader(root)
    try:
        tip = reader.resolve(head or "HEAD")
        trusted = reader.resolve(ref)
        base = reader.merge_base(trusted, tip)
        if head is not None:
            return Changes(base, set(reader.changed(base, tip)), trusted=trusted)
        at_base = reader.blob_ids(base)
        top = reader.root
    finally:
        if own:
            reader.close()
    here: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d not in SKIP]
        for n in filenames:
            if n in SKIP:  # a linked worktree's or submodule's ``.git`` file: git's
                continue
            p = Path(dirpath) / n
            rel = p.relative_to(top).as_posix()
            try:
                data = os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
            except OSError:
                continue
            here[rel] = blob_sha(data)
    changed = {p for p in at_base.keys() | here.keys() if at_base.get(p) != here.get(p)}
    return Changes(base, changed, trusted=trusted)


def base_text(root: Path, commit: str, path: str, *,
              reader: GitReader | None = None) -> str | None:
    """One file's text at ``commit`` (None: absent); ``reader`` as for
    :func:`changed_files`."""
    own = reader is None
    reader = reader or GitReader(root)
    try:
        data, _ = reader.blob(commit, path)
    finally:
        if own:
            reader.close()
    return data.decode("utf-8", "replace") if data is not None else None


def base_files(root: Path, commit: str, prefix: str, *,
               reader: GitReader | None = None) -> dict[str, bytes]:
    """Every file under ``prefix`` at ``commit`` (path → bytes); ``reader`` as for
    :func:`changed_files`."""
    own = reader is None
    reader = reader or GitReader(root)
    try:
        out: dict[str, bytes] = {}
        for path in sorted(reader.blob_ids(commit, prefix.rstrip("/") or ".")):
            if path.startswith(prefix):
                data, _ = reader.blob(commit, path)
                if data is not None:
                    out[path] = data
        return out
    finally:
        if own:
            reader.close()


@dataclass(frozen=True)
class ShellDelta:
    """What a change did to a shell file that exists at both sides, from the syntax
    trees: whether its top level (everything outside function definitions, comments
    left out) changed, and the functions it added, removed or whose body changed.  A
    side the parser refuses changes its top level (any change counts)."""

    top: bool
    functions: frozenset[str]

    @classmethod
    def of(cls, old: str, new: str) -> ShellDelta:
        from inferencex_tools import shellsyntax as S

        a, b = S.parse(old), S.parse(new)
        if not (a.ok and b.ok):
            return cls(True, frozenset())

        def split(syn: S.Syntax) -> tuple[str, dict[str, str]]:
            top = S.skeleton(syn.root, cut=lambda n: n.type == "function_definition")
            funcs = {name: "\n".join(S.skeleton(x) for x in bodies)
                     for name, bodies in S.functions(syn).items()}
            return top, funcs

        (top0, f0), (top1, f1) = split(a), split(b)
        changed = frozenset(n for n in f0.keys() | f1.keys() if f0.get(n) != f1.get(n))
        return cls(top0 != top1, changed)


@dataclass
class Relevance:
    """Why a row is traced in --base mode (empty: it is not)."""

    reasons: list[str] = field(default_factory=list)


def runner_label_changes(base: bytes | None, head: bytes | None) -> set[str] | None:
    """The runner labels whose ``runners.yaml`` entry differs between two revisions of
    the file (their nodes under ``labels``, their ``hardware``); None when anything else
    differs or either revision does not load as the expected mapping (every row)."""
    from inferencex_tools.errors import IxtoolError
    from inferencex_tools.io.yamlio import load_safe
    from inferencex_tools.sweep.load import runners_document

    docs: list[dict[str, Any]] = []
    for raw in (base, head):
        try:
            doc = runners_document(load_safe(raw, source=RUNNERS_FILE)) \
                if raw is not None else None
        except IxtoolError:
            return None
        if not isinstance(doc, dict) or not all(
                isinstance(doc.get(k, {}), dict) for k in ("labels", "hardware")):
            return None
        docs.append(doc)
    old, new = docs
    if {k: v for k, v in old.items() if k not in ("labels", "hardware")} != \
            {k: v for k, v in new.items() if k not in ("labels", "hardware")}:
        return None
    out: set[str] = set()
    for part in ("labels", "hardware"):
        a, b = old.get(part) or {}, new.get(part) or {}
        if bool(a) != bool(b):
            return None  # no labels at all: every job's families come from launcher names
        out.update(str(k) for k in set(a) | set(b) if a.get(k) != b.get(k))
    return out


def row_reasons(*, key: str, config: Any, base_config: Any, files: Iterable[str],
                changes: Changes, prefix: str, changed_prefixes: Mapping[str, str],
                closure: Callable[[str], Iterable[str]],
                moved: Callable[[], bool] | None = None) -> list[str]:
    """Why one row must be traced (empty list: nothing it depends on changed).
    ``moved``: does the row's job differ from the base block's same job (called only
    when its config block changed; None: it does)."""
    reasons: list[str] = []
    if base_config is None:
        reasons.append(f"{key} is new")
    elif config != base_config and (moved is None or moved()):
        reasons.append(f"config block of {key} changed")
    label = str(config.get("runner")) if isinstance(config, dict) else ""
    if changes.runner_labels is None:
        reasons.append(f"{changes.runners} changed")
    elif label in changes.runner_labels:
        reasons.append(f"{changes.runners} changed (runner label {label})")
    for f in files:
        touched = sorted(set(closure(f)) & changes.files)
        if touched:
            reasons.append(f"{', '.join(touched)} changed ({f} depends on it)")
    if prefix in changed_prefixes:
        reasons.append(changed_prefixes[prefix])
    return reasons


# ------------------------------------------------------------------ the trusted job view

LAUNCHERS = "runners/"  # the launchers and what they source (SWEEP §7: runners/launch_*.sh)


def job_view_files(changes: Changes) -> list[str]:
    """The changed files the PR's own sweep does not run as the PR has them: the sweep's
    row job runs the base's workflows and launchers (everything under ``runners/``) and
    finds the row's node in the base's runners.yaml; only the recipe is the PR's
    (docs/security.md, "the base decides").  Empty: the head's job view is the base's."""
    out = sorted(f for f in changes.files if f.startswith((WORKFLOWS, LAUNCHERS)))
    if changes.runner_labels is None or changes.runner_labels:
        out.append(changes.runners)
    return out


def materialize_job_view(root: Path, commit: str, runners: str, dest: Path, *,
                         reader: GitReader | None = None) -> list[str]:
    """Write into ``dest`` the checkout at ``root`` as the PR's sweep job sees it: its
    files, except the workflows, the launchers' folder and ``runners`` (runners.yaml),
    which are ``commit``'s.  Symbolic links are copied as links (the sandbox's copy
    applies its own rules to them).  Returns the files taken from ``commit``."""
    import shutil

    from inferencex_tools.io.layout import SKIP_DIRS

    trusted = (WORKFLOWS, LAUNCHERS)
    top = root.resolve()
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for n in filenames:
            src = Path(dirpath) / n
            rel = src.relative_to(top).as_posix()
            if rel.startswith(trusted) or rel == runners:
                continue
            out = dest / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            if src.is_symlink():
                out.symlink_to(os.readlink(src))
            elif src.is_file():
                shutil.copyfile(src, out)
    own = reader is None
    git = reader or GitReader(root)
    try:
        blobs: dict[str, bytes] = {}
        for prefix in trusted:
            blobs.update(base_files(root, commit, prefix, reader=git))
        data, _ = git.blob(commit, runners)
        if data is not None:
            blobs[runners] = data
        links = git.symlinks(commit, *(p.rstrip("/") for p in trusted), runners)
    finally:
        if own:
            git.close()
    _write_blobs(blobs, links, dest)
    return sorted(blobs)


def materialize_commit(root: Path, commit: str, dest: Path, *,
                       reader: GitReader | None = None) -> None:
    """Write into ``dest`` every file of ``commit`` (symbolic links as links): the base
    revision as its own full check sees it."""
    own = reader is None
    git = reader or GitReader(root)
    try:
        blobs = base_files(root, commit, "", reader=git)
        links = git.symlinks(commit)
    finally:
        if own:
            git.close()
    _write_blobs(blobs, links, dest)


def _write_blobs(blobs: Mapping[str, bytes], links: set[str], dest: Path) -> None:
    from inferencex_tools.io.files import contained

    for rel, data in blobs.items():
        out = contained(dest, rel)  # a path from git, kept inside the view all the same
        out.parent.mkdir(parents=True, exist_ok=True)
        if rel in links:
            out.symlink_to(data.decode("utf-8", "surrogateescape"))
        else:
            out.write_bytes(data)
