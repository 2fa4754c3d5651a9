"""I/O orchestration of the merge commands: canonicalize, resolve-conflict,
merge-driver and add.  Gathers bytes (working tree, git refs, git index stages,
driver temp files), calls the pure cores in :mod:`merge_ops` / :mod:`add`, writes
results atomically and returns a :class:`Result` for the reporters."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencex_tools.changelog.merge_ops import MergeOutcome, canonicalize, resolve_conflict
from inferencex_tools.changelog.service import (
    _default_base,
    _master_keys_worktree,
    _open_git,
    _repo_slug,
)
from inferencex_tools.ci.ids import pr_number
from inferencex_tools.errors import ConflictError, GitError, InputError, IxtoolError, UsageError
from inferencex_tools.io.actions import PR_ENV, ActionsEnv
from inferencex_tools.io.files import atomic_write, read_bytes
from inferencex_tools.report.findings import Result

if TYPE_CHECKING:
    from inferencex_tools.io.git import GitRepo
STAGES = {1: "merge-base", 2: "ours, the PR side", 3: "theirs, the main side"}
_MISSING_WHY = {
    1: "the file does not exist at the merge-base",
    2: "the PR side (ours) deleted the file",
    3: "the main side (theirs) deleted the file",
}


def _result(command: str, label: str, outcome: MergeOutcome, *, written: bool,
            **info: Any) -> Result:
    result = Result(command=command)
    result.extend(outcome.findings)
    result.checked.append(label)
    if written:
        result.done.append(outcome.message)
    result.info.update(message=outcome.message, changed=outcome.changed, written=written,
                       **info)
    return result


# ------------------------------------------------------------------------ canonicalize

@dataclass
class CanonicalizeRequest:
    path: Path
    pr: int
    base: str | None = None
    repo: str | None = None
    actions: ActionsEnv = field(default_factory=ActionsEnv)  # $GITHUB_REPOSITORY


def run_canonicalize(req: CanonicalizeRequest) -> Result:
    git_repo = _open_git(req.path)
    if git_repo is None:
        raise InputError(f"{req.path}: not inside a git repository; canonicalize compares "
                         "against the base branch",
                         hint="run it inside a clone of the repository (where --base, default "
                         "origin/main, exists)")
    repo = _repo_slug(req.repo, git_repo, req.actions)
    base = req.base or _default_base(git_repo)
    rel = git_repo.relpath(req.path if req.path.is_absolute() else Path.cwd() / req.path)
    merge_base = git_repo.merge_base(base, "HEAD")
    base_raw = git_repo.show(merge_base, rel) or b""
    head_raw = read_bytes(req.path)
    label = str(req.path)
    outcome = canonicalize(base_raw, head_raw, pr=req.pr, repo=repo, label=label)
    if outcome.changed:
        atomic_write(req.path, outcome.data)
    return _result("changelog canonicalize", label, outcome, written=outcome.changed,
                   pr=req.pr, repo=repo, base=base, merge_base=merge_base)


# -------------------------------------------------------------------- resolve-conflict

@dataclass
class ResolveRequest:
    path: Path
    pr: int
    repo: str | None = None
    base_file: Path | None = None
    ours_file: Path | None = None
    theirs_file: Path | None = None
    output: Path | None = None
    actions: ActionsEnv = field(default_factory=ActionsEnv)  # $GITHUB_REPOSITORY


def read_stages(git_repo: GitRepo, rel: str) -> tuple[bytes, bytes, bytes]:
    """Stages 1 (merge-base), 2 (ours) and 3 (theirs) of ``rel`` from the git index."""
    try:
        entries = git_repo.index_stages(rel)
    except GitError as exc:  # a corrupt or unreadable index
        raise GitError(f"cannot read the git index: {exc.message}") from None
    stages = {s: entries.get(s) for s in (1, 2, 3)}
    if all(e is None for e in stages.values()):
        state = ("is not in a merge conflict" if 0 in entries
                 else "is not in the git index")
        raise UsageError(f"{rel} {state} (no index stages 1-3): resolve-conflict resolves a "
                         "merge that stopped on it",
                         hint="run it while `git merge origin/main` is stopped on the "
                         "changelog, or pass --base/--ours/--theirs FILE")
    out: list[bytes] = []
    for s in (1, 2, 3):
        e = stages[s]
        if e is None:
            raise ConflictError(f"could not read stage {s} ({STAGES[s]}) of {rel} from the git "
                                f"index: {_MISSING_WHY[s]}; resolve by hand")
        out.append(e)
    return out[0], out[1], out[2]


def run_resolve(req: ResolveRequest) -> Result:
    files = (req.base_file, req.ours_file, req.theirs_file)
    label = str(req.path)
    if any(f is not None for f in files):
        if not all(f is not None for f in files):
            raise UsageError("--base, --ours and --theirs go together",
                             hint="give all three files, or none to read the git index")
        base_raw, ours_raw, theirs_raw = (read_bytes(f) for f in files if f is not None)
        git_repo = _open_git(req.path) if req.repo is None else None
        source = "files"
    else:
        git_repo = _open_git(req.path)
        if git_repo is None:
            raise InputError(f"{req.path}: not inside a git repository",
                             hint="pass --base/--ours/--theirs FILE to resolve without git")
        rel = git_repo.relpath(req.path if req.path.is_absolute() else Path.cwd() / req.path)
        base_raw, ours_raw, theirs_raw = read_stages(git_repo, rel)
        source = "index"
    repo = _repo_slug(req.repo, git_repo, req.actions)
    outcome = resolve_conflict(base_raw, ours_raw, theirs_raw, pr=req.pr, repo=repo,
                               label=label)
    target = req.output or req.path
    atomic_write(target, outcome.data)  # the conflicted file is always replaced
    return _result("changelog resolve-conflict", label, outcome, written=True, pr=req.pr,
                   repo=repo, source=source, output=str(target))


# ------------------------------------------------------------------------ merge driver

@dataclass
class DriverRequest:
    ancestor: Path  # %O
    current: Path  # %A (result goes here)
    other: Path  # %B
    pathname: str  # %P
    pr: int | None = None
    repo: str | None = None
    pr_side: str = "ours"  # which side is the PR: ours (%A) or theirs (%B)
    cwd: Path = field(default_factory=Path.cwd)
    actions: ActionsEnv = field(default_factory=ActionsEnv)  # $IXTOOL_PR, the PR event


def driver_pr(explicit: int | None, actions: ActionsEnv) -> int:
    """The PR number: --pr, else $IXTOOL_PR, else the pull_request event of GitHub Actions."""
    if explicit is not None:
        return explicit
    env = actions.pr
    if env:
        number = pr_number(env)
        if number is None:
            shown = env if len(env) <= 40 else f"{env[:40]}… ({len(env):,} characters)"
            raise UsageError(f"${PR_ENV}={shown!r} is not a PR number",
                             hint=f"set ${PR_ENV} to the PR number (e.g. 1234, no leading "
                             "zeros) or pass --pr N")
        return number
    event = actions.pull_request()
    if event is not None and isinstance(event.get("number"), int):
        return int(event["number"])
    raise UsageError("the changelog merge driver needs the PR number",
                     hint=f"set {PR_ENV}=N for the merge ({PR_ENV}=123 git merge origin/main) "
                     "or put --pr N in the driver command")


def _text_merge(req: DriverRequest) -> None:
    """Leave git's ordinary conflict markers in %A (the driver refused)."""
    from inferencex_tools.io.git import merge_file

    merge_file(req.cwd, req.current, req.ancestor, req.other, name=req.pathname)


def run_driver(req: DriverRequest) -> Result:
    if req.pr_side not in ("ours", "theirs"):
        raise UsageError(f"--pr-side must be ours or theirs, not {req.pr_side!r}",
                         hint="--pr-side takes ours or theirs")
    try:
        pr = driver_pr(req.pr, req.actions)
        base_raw = read_bytes(req.ancestor)
        current, other = read_bytes(req.current), read_bytes(req.other)
        pr_raw, main_raw = (current, other) if req.pr_side == "ours" else (other, current)
        git_repo = None
        if req.repo is None:
            try:
                from inferencex_tools.io.git import GitRepo

                git_repo = GitRepo.open(req.cwd)
            except GitError:
                git_repo = None
        repo = _repo_slug(req.repo, git_repo, req.actions)
        outcome = resolve_conflict(base_raw, pr_raw, main_raw, pr=pr, repo=repo,
                                   label=req.pathname)
    except IxtoolError:
        _text_merge(req)
        raise
    atomic_write(req.current, outcome.data)
    return _result("changelog merge-driver", req.pathname, outcome, written=True, pr=pr,
                   repo=repo, pr_side=req.pr_side)


# -------------------------------------------------------------------------------- add

@dataclass
class AddRequest:
    path: Path
    config_keys: list[str]
    descriptions: list[str]
    scenario_types: list[str] = field(default_factory=list)
    pr: int | None = None
    repo: str | None = None
    configs: list[Path] | None = None
    actions: ActionsEnv = field(default_factory=ActionsEnv)  # $GITHUB_REPOSITORY


def run_add(req: AddRequest) -> Result:
    from inferencex_tools.changelog.add import EntrySpec, append_entry, check_spec

    git_repo = _open_git(req.path) if (req.repo is None or not req.configs) else None
    repo = _repo_slug(req.repo, git_repo, req.actions)
    spec = EntrySpec(list(req.config_keys), list(req.descriptions),
                     list(req.scenario_types), req.pr, repo)
    check_spec(spec)
    root = git_repo.root if git_repo is not None else (req.path.parent or Path("."))
    master = _master_keys_worktree(root, req.configs)
    if master is None:
        raise InputError(f"no master configs found ({root / 'configs'}/*-master.yaml); "
                         "config keys cannot be checked",
                         hint="run from the repository root or pass --configs FILE")
    raw = read_bytes(req.path) if req.path.exists() else b""
    label = str(req.path)
    outcome = append_entry(raw, spec, master_keys=master, label=label)
    result = Result(command="changelog add")
    result.extend(outcome.findings)
    result.checked.append(label)
    if outcome.data is not None:
        atomic_write(req.path, outcome.data)
        result.done.append(outcome.message)
    result.info.update(message=outcome.message, changed=outcome.data is not None,
                       entry=outcome.entry.decode("utf-8"), repo=repo, pr=req.pr)
    return result
