"""I/O orchestration for ``ixtool sweep``: find and load the inputs, validate them
the way the reference does, generate.  The CLI calls these; they never print."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencex_tools.errors import InputError, UsageError
from inferencex_tools.io.layout import (
    RUNNERS,
    find_master_files,
    relative_to,
    repo_root,
)
from inferencex_tools.progress import ProgressFn, no_progress
from inferencex_tools.sweep.checks import first_failing
from inferencex_tools.sweep.generate import Matrix, SweepRequest, generate_matrix
from inferencex_tools.sweep.load import Configs, Runners, load_masters, load_runners

if TYPE_CHECKING:
    from inferencex_tools.io.git import GitRepo
    from inferencex_tools.sweep.changelog import Snapshot

DEFAULT_RUNNERS = RUNNERS


def default_master_files(cwd: Path | None = None, option: str = "--config-files FILE…"
                         ) -> list[Path]:
    """``configs/*-master.yaml`` of the current directory, else of the repository root."""
    here = Path.cwd() if cwd is None else cwd
    found = find_master_files(here)
    if not found:
        from inferencex_tools.io.layout import find_root, no_master_configs

        raise no_master_configs(find_root(here), option, root_option=False)
    return found


def default_runners_file(cwd: Path | None = None) -> Path:
    """runners.yaml of the current directory's layout, else of its repository root's
    (relative to the current directory)."""
    from inferencex_tools.io.layout import layout_of

    here = Path.cwd() if cwd is None else cwd
    first = layout_of(here).runners
    if (here / first).exists():
        return Path(first)
    root = repo_root(here)
    if root is not None:
        at_root = root / layout_of(root).runners
        if at_root.exists():
            return relative_to(at_root, here)
    return Path(first)


@dataclass
class Inputs:
    configs: Configs
    runners: Runners


def validate_for_generation(configs: Configs) -> None:
    """The reference's master-config validation: the first failing key aborts."""
    bad = first_failing(configs.data)
    if bad is None:
        return
    key, issues = bad
    lines = "; ".join(i.message for i in issues[:8])
    more = f" (+{len(issues) - 8} more)" if len(issues) > 8 else ""
    raise InputError(
        f"master config entry '{key}' ({configs.origin.get(key, '?')}) failed validation: "
        f"{lines}{more}",
        hint="`ixtool config validate` shows every problem with its line")


def load_inputs(config_files: list[str] | None, runner_config: str | None) -> Inputs:
    files: list[str | os.PathLike[str]] = (
        list(config_files) if config_files else list(default_master_files()))
    configs = load_masters(files)
    runners = load_runners(runner_config or default_runners_file())
    validate_for_generation(configs)
    return Inputs(configs, runners)


def run_sweep(req: SweepRequest, config_files: list[str] | None,
              runner_config: str | None) -> Matrix:
    req.check()  # usage errors before any file is read (as the reference)
    inputs = load_inputs(config_files, runner_config)
    return generate_matrix(inputs.configs, inputs.runners, req)


def write_output(path: str, text: str) -> None:
    from inferencex_tools.io.files import atomic_write

    try:
        atomic_write(path, text.encode())
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror}",
                         hint="check that the directory of --output exists and is "
                         "writable") from None


# ------------------------------------------------------------------ config validate

def _scripts_root(masters: list[Path], scripts_dir: Path | None) -> Path | None:
    if scripts_dir is not None:
        return scripts_dir if scripts_dir.is_dir() else None
    if not masters:
        return None
    from inferencex_tools.io.layout import CONFIG_DIRS, layout_of, repo_root

    configs = masters[0].resolve().parent
    if (configs.parent / "benchmarks").is_dir():  # configs/../ (the layout since 2026-07-02)
        return configs.parent
    # the repository whose configs they are: in one of the layout's default folders
    # (.github/configs/ before it) — what a checkout's settings or workflows say cannot
    # take that away — or where its own layout puts them
    root = repo_root(configs)
    if root is None or not (root / "benchmarks").is_dir():
        return None
    rel = configs.relative_to(root).as_posix()
    return root if rel in CONFIG_DIRS or layout_of(root).config_dir == rel else None


def launch_scripts(root: Path) -> dict[str, str]:
    """The shell scripts that say where multinode recipes come from (path → text)."""
    from inferencex_tools.io.files import read_bytes

    out: dict[str, str] = {}
    for pattern in ("runners/*.sh", "benchmarks/multi_node/**/*.sh"):  # recipes.is_launch_script
        for p in sorted(root.glob(pattern)):
            if p.is_file():  # in-repository symlinks are read (read_bytes refuses others)
                try:
                    out[p.relative_to(root).as_posix()] = read_bytes(p).decode(
                        "utf-8", "replace")
                except (OSError, InputError):
                    continue
    return out


def _base_keys(base: str, masters: list[Path]) -> set[str]:
    from inferencex_tools.changelog.configkeys import top_level_keys
    from inferencex_tools.io.git import GitRepo

    repo = GitRepo.open(masters[0].parent if masters else Path.cwd())
    keys: set[str] = set()
    for m in masters:
        raw = repo.show(base, repo.relpath(m))
        if raw is not None:
            keys.update(top_level_keys(raw.decode("utf-8", "replace"), source=f"{m}@{base}"))
    return keys


def _looks_like_runners(path: Path) -> bool:
    """runners.yaml by name, or a small mapping with only labels/hardware keys."""
    if "runners" in path.name:
        return True
    try:
        if path.stat().st_size > 65536:
            return False
        from inferencex_tools.io.yamlio import load_safe

        data = load_safe(path.read_bytes(), source=str(path))
    except (OSError, InputError):
        return False
    return (isinstance(data, dict) and isinstance(data.get("labels"), dict)
            and set(data) <= {"labels", "hardware"})


def run_config_validate(files: list[Path] | None, runner_config: Path | None,
                        scripts_dir: Path | None, base: str | None, *,
                        progress: ProgressFn = no_progress) -> tuple[Any, Any]:
    """(result of the working tree, result of the same files at the merge-base of
    ``base`` and HEAD — None without ``base``)."""
    from inferencex_tools.io.files import read_bytes
    from inferencex_tools.sweep.validate import MasterFile, ValidateInput, script_dirs, validate

    masters: list[Path] = []
    runners: Path | None = runner_config
    for f in files or []:
        if runners is None and _looks_like_runners(f):
            runners = f
        else:
            masters.append(f)
    if not files:
        masters = default_master_files(option="FILE… arguments")
    if runners is None:
        cand = default_runners_file()
        runners = cand if cand.exists() else None
    root = _scripts_root(masters, scripts_dir)
    exists = None
    if root is not None:
        def exists(rel: str, _root: Path = root) -> bool:
            # names built from config data: a path out of benchmarks/ or through a
            # symbolic link is not there (``io.files.contained``)
            from inferencex_tools.io.files import PathRefused, contained

            try:
                folder = rel.split("/", 1)[0]
                return contained(_root, rel, folder,
                                 leaf_link_ok=folder == "runners").is_file()
            except PathRefused:
                return False
    inp = ValidateInput(
        masters=[MasterFile(str(m), read_bytes(m)) for m in masters],
        runners=MasterFile(str(runners), read_bytes(runners)) if runners else None,
        exists=exists,
        base_keys=_base_keys(base, masters) if base else None,
        scripts=launch_scripts(root) if root is not None else None,
        script_dirs=script_dirs(lambda d: _holds_files(root / d)) if root is not None
        else None,
    )
    progress(0, None, "the working tree")
    result = validate(inp)
    if base is None:
        return result, None
    progress(0, None, f"the merge-base of {base} and HEAD")
    at_base = validate(_input_at(base, masters, runners, root))
    _by_contract(result, at_base, base, masters)
    return result, at_base


def _by_contract(result: Any, at_base: Any, base: str, masters: list[Path]) -> None:
    """The branch's own findings (not at the base by fingerprint) judged by the base's
    contract (:func:`inferencex_tools.sweep.contract.judge`), in place."""
    from inferencex_tools.report.adopt import split_known
    from inferencex_tools.report.findings import Severity
    from inferencex_tools.sweep import contract as C
    from inferencex_tools.sweep.validate import vocabulary

    new, _ = split_known(result.findings, at_base.findings)
    if not any(C.contract_of(f) and f.severity is Severity.ERROR for f in new):
        return
    fields = vocabulary() | {x for f in new for x in f.data.get("fields", ())}
    judged = C.judge(new, at_base.findings,
                     C.generator_fields(_python_changes(base, masters), fields))
    swap = {id(a): b for a, b in zip(new, judged, strict=True)}
    result.findings = [swap.get(id(f), f) for f in result.findings]


def _python_changes(base: str, masters: list[Path]) -> list[tuple[str, str | None, str | None]]:
    """(path, text at the merge-base, text in the working tree) of each ``*.py`` file the
    branch changes (committed or not)."""
    from inferencex_tools.io.files import read_bytes
    from inferencex_tools.io.gitcat import GitReader

    top = repo_root((masters[0] if masters else Path.cwd()).resolve().parent)
    if top is None:
        return []
    reader = GitReader(top)
    out: list[tuple[str, str | None, str | None]] = []
    try:
        ref = reader.merge_base(base, "HEAD")
        for p in sorted(set(reader.changed(ref, "HEAD")) | set(reader.uncommitted())):
            if not p.endswith(".py"):
                continue
            old = reader.blob(ref, p)[0]
            try:
                now: bytes | None = read_bytes(top / p)
            except (OSError, InputError):
                now = None
            out.append((p, old.decode("utf-8", "replace") if old is not None else None,
                        now.decode("utf-8", "replace") if now is not None else None))
    finally:
        reader.close()
    return out


def _holds_files(folder: Path) -> bool:
    """A folder of the tree as git has it: one that holds a file (git keeps no empty
    folders; one left behind on disk is not there)."""
    return folder.is_dir() and any(p.is_file() for p in folder.rglob("*"))


def _input_at(base: str, masters: list[Path], runners: Path | None,
              root: Path | None) -> Any:
    """The same inputs as they were at the merge-base of ``base`` and HEAD (labels kept,
    so that findings compare by file)."""
    from inferencex_tools.io.gitcat import GitReader
    from inferencex_tools.sweep.recipes import follow_git_symlinks, is_launch_script
    from inferencex_tools.sweep.validate import MasterFile, ValidateInput, folders_of, script_dirs

    top = repo_root((masters[0] if masters else Path.cwd()).resolve().parent)
    if top is None:
        raise UsageError("--base needs a git repository", hint="drop --base")
    reader = GitReader(top)
    try:
        ref = reader.merge_base(base, "HEAD")

        def at(p: Path) -> MasterFile | None:
            rel = p.resolve().relative_to(top.resolve()).as_posix()
            raw = reader.blob(ref, rel)[0]
            return MasterFile(str(p), raw) if raw is not None else None

        found = [m for m in (at(p) for p in masters) if m is not None]
        paths = reader.paths(ref, "benchmarks", "runners") if root is not None else set()
        scripts = {p: (reader.blob(ref, p)[0] or b"").decode("utf-8", "replace")
                   for p in sorted(paths) if is_launch_script(p)}
    finally:
        reader.close()
    return ValidateInput(masters=found, runners=at(runners) if runners else None,
                         exists=paths.__contains__ if root is not None else None,
                         scripts=follow_git_symlinks(scripts) if root is not None else None,
                         script_dirs=script_dirs(folders_of(paths)) if root is not None
                         else None,
                         positions=False)  # matched without lines


# ------------------------------------------------------------------ from-changelog

_FATAL_CHANGELOG = ("CL1", "CL2", "CL401", "CL402")


@dataclass
class FromChangelogResult:
    matrix: dict[str, Any]
    plan: Any
    merge_base: str
    head_label: str
    keys: list[str]


def snapshot_at(repo: GitRepo, ref: str | None) -> Snapshot:
    """Master configs + runners.yaml at ``ref`` (None: the working tree), validated."""
    from inferencex_tools.io.layout import layout_of, repo_layout_at
    from inferencex_tools.sweep.changelog import Snapshot
    from inferencex_tools.sweep.load import merge_masters, parse_runners

    if ref is None:
        root = repo.root
        layout = layout_of(root)
        parts = [(p, (root / p).read_bytes()) for p in layout.masters]
        rpath = root / layout.runners
        runners_raw = rpath.read_bytes() if rpath.exists() else None
        where = "the working tree"
    else:
        short = repo.resolve(ref)[:12]
        layout = repo_layout_at(repo, ref)
        parts = [(f"{p}@{short}", repo.show(ref, p) or b"") for p in layout.masters]
        runners_raw = repo.show(ref, layout.runners)
        where = f"{ref} ({short})"
    if not parts:
        raise InputError(f"no master configs (configs/*-master.yaml or "
                         f".github/configs/*-master.yaml) at {where}",
                         hint="the ref must hold master configs; check --base/--head")
    if runners_raw is None:
        raise InputError(f"no {layout.runners} at {where}",
                         hint=f"the ref must hold {layout.runners}; check --base/--head")
    configs = merge_masters(parts)
    validate_for_generation(configs)
    return Snapshot(configs, parse_runners(runners_raw, f"{layout.runners}@{where}"))


def run_from_changelog(base: str, head: str | None, changelog: Path, opts: Any,
                       *, repo_path: Path | None = None,
                       progress: ProgressFn = no_progress) -> FromChangelogResult:
    from inferencex_tools.io.git import GitRepo
    from inferencex_tools.sweep.changelog import Plan, build_matrix
    from inferencex_tools.sweep.generate import generate_matrix

    repo = GitRepo.open(repo_path or Path.cwd())
    progress(0, None, "reading the changelog")
    entries, mb, head_label = _new_entries(repo, base, head, changelog, repo_path)
    progress(0, None, f"reading the configs at {head or 'the working tree'}")
    head_snap = snapshot_at(repo, head)
    base_snap = (snapshot_at(repo, mb) if any(e.get("append-only") for e in entries)
                 else None)
    plan = Plan()
    matrix = build_matrix(entries, head_snap, base_snap, opts, generate_matrix,
                          base_ref=base, head_ref=head or "HEAD", plan=plan,
                          progress=progress)
    return FromChangelogResult(matrix, plan, mb, head_label, plan.keys)


def _new_entries(repo: GitRepo, base: str, head: str | None, changelog: Path,
                 repo_path: Path | None) -> tuple[list[dict[str, Any]], str, str]:
    """The changelog entries appended since merge-base(base, head): (entries, merge-base,
    head label); InputError when the change is not a clean append."""
    from inferencex_tools.changelog.validate import Options, analyze_change
    from inferencex_tools.io.files import read_bytes

    cl_path = changelog if changelog.is_absolute() else (repo_path or Path.cwd()) / changelog
    if not cl_path.exists() and not changelog.is_absolute():
        cl_path = repo.root / changelog  # run from a subdirectory: the repository's file
    rel = repo.relpath(cl_path)
    mb = repo.merge_base(base, head or "HEAD")
    base_raw = repo.show(mb, rel) or b""
    if head is None:
        head_raw = read_bytes(cl_path)
    else:
        raw = repo.show(head, rel)
        if raw is None:
            raise InputError(f"{rel} does not exist at {head}",
                             hint="check --changelog and --head (the file is read from "
                             "that commit)")
        head_raw = raw
    analysis = analyze_change(base_raw, head_raw, rel, Options(master_keys=None),
                              base_label=f"{rel}@{mb[:12]}")
    fatal = [f for f in analysis.findings
             if f.severity.value == "error" and f.rule.startswith(_FATAL_CHANGELOG)]
    if fatal:
        f = fatal[0]
        where = f"{f.file}:{f.line}" if f.line else f.file
        raise InputError(f"{where}: [{f.rule}] {f.message}",
                         hint=f"`ixtool changelog validate --base {base}` lists every problem")
    if analysis.structural:
        raise InputError(f"{rel}: historical entries were deleted or changed since the "
                         f"merge-base {mb[:12]}; nothing to generate",
                         hint="the changelog is append-only; merge the base branch first")
    entries = [e.data for e in analysis.new_entries if isinstance(e.data, dict)]
    return entries, mb, "the working tree" if head is None else head
