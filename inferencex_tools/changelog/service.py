"""Orchestration of ``changelog validate``: gathers inputs through the I/O
adapters (files, git, the GitHub event the CLI found), calls the pure core,
returns a Result."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from inferencex_tools.changelog.links import repo_slug
from inferencex_tools.changelog.validate import (
    ChangeAnalysis,
    Options,
    analyze_change,
    fold_history_quirks,
    validate_standalone,
)
from inferencex_tools.errors import InputError, UsageError
from inferencex_tools.io.actions import ActionsEnv
from inferencex_tools.io.files import atomic_write, read_bytes
from inferencex_tools.io.git import DEFAULT_BRANCHES
from inferencex_tools.io.layout import master_files, master_paths_at
from inferencex_tools.report.findings import Result

if TYPE_CHECKING:
    from inferencex_tools.io.git import GitRepo


@dataclass
class ValidateRequest:
    path: Path
    base: str | None = None
    head: str | None = None
    pr: int | None = None
    repo: str | None = None
    configs: list[Path] | None = None
    fix: bool = False
    actions: ActionsEnv = field(default_factory=ActionsEnv)  # the PR event, $GITHUB_REPOSITORY
    no_git: bool = False  # standalone: never look at git (the whole file, history included)
    history: bool = False  # standalone: list history's quirks (as notes) instead of counting


def _repo_slug(explicit: str | None, git_repo: GitRepo | None, actions: ActionsEnv) -> str:
    """--repo, else $GITHUB_REPOSITORY (the base repository under Actions), else the
    ``upstream`` or ``origin`` remote's GitHub slug, else the InferenceX default."""
    return repo_slug(explicit or actions.repository,
                     git_repo.remote_slug if git_repo is not None else None)


def _blob(git_repo: GitRepo, ref: str, rel: str) -> bytes | None:
    """The file at a ref, with the same size limit as files read from disk."""
    from inferencex_tools.io.files import DEFAULT_MAX_BYTES

    data: bytes | None = git_repo.show(ref, rel)
    if data is not None and len(data) > DEFAULT_MAX_BYTES:
        raise InputError(
            f"{rel}@{ref}: file is {len(data) / 2**20:.1f} MiB, over the "
            f"{DEFAULT_MAX_BYTES // (1024 * 1024)} MiB limit",
            hint="ixtool refuses files this large; check that the right file was given")
    return data


def _open_git(path: Path) -> GitRepo | None:
    """The git repository the file really lives in: found from its resolved location, so
    a path through a symlinked folder (``../shared`` into another work tree) finds that
    work tree's repository, never the one the symlink sits in."""
    from inferencex_tools.errors import GitError
    from inferencex_tools.io.git import GitRepo

    where = path.parent if path.parent != Path("") else Path(".")
    try:
        where = where.resolve() if where.exists() else where
        return GitRepo.open(where)
    except (GitError, OSError):
        return None


def _master_keys_worktree(root: Path, explicit: list[Path] | None) -> list[str] | None:
    from inferencex_tools.changelog.configkeys import top_level_keys

    files = explicit if explicit else master_files(root)
    if not files:
        return None
    keys: list[str] = []
    for f in files:
        keys += top_level_keys(read_bytes(f).decode("utf-8", "replace"), source=str(f))
    return keys


def _master_keys_at(git_repo: GitRepo, ref: str) -> list[str] | None:
    from inferencex_tools.changelog.configkeys import top_level_keys

    paths = master_paths_at(git_repo, ref)
    if not paths:
        return None
    keys: list[str] = []
    for p in paths:
        keys += top_level_keys((git_repo.show(ref, p) or b"").decode("utf-8", "replace"),
                               source=f"{p}@{ref}")
    return keys


CHANGELOG = "perf-changelog.yaml"


def default_changelog(cwd: Path | None = None) -> Path:
    """``./perf-changelog.yaml``, else the one at the repository root (relative to the
    current directory, like ``sweep`` and ``config`` find their inputs)."""
    from inferencex_tools.io.layout import relative_to, repo_root

    here = Path.cwd() if cwd is None else cwd
    if (here / CHANGELOG).exists():
        return Path(CHANGELOG)
    root = repo_root(here)
    if root is not None and (root / CHANGELOG).exists():
        return relative_to(root / CHANGELOG, here)
    return Path(CHANGELOG)


def run_validate(req: ValidateRequest) -> Result:
    pr, base = _pr_and_base(req)
    label = str(req.path)
    result = Result(command="changelog validate")
    git_repo = _open_git(req.path) if (base is not None or req.repo is None
                                       or not req.no_git) else None
    repo = _repo_slug(req.repo, git_repo, req.actions)
    base, local, why = _which_base(req, git_repo, pr, base)
    if base is None:
        return _standalone(req, label, repo, result, why=why)
    if git_repo is None:
        raise InputError(f"{req.path}: not inside a git repository; diff mode needs git",
                         hint="drop --base/--pr for a standalone check")
    merge_base, base_raw, head_raw, master = _diff_inputs(req, git_repo, base)
    opts = Options(repo=repo, pr=pr, master_keys=master, pending=local is not None)
    a = analyze_change(base_raw, head_raw, label, opts, base_label=f"{label}@{base}")
    if req.fix:
        a = _fix(req, a, opts, base_raw, base, result)
    result.extend(a.findings)
    shown = base[:12] if local is not None else base
    where = _elsewhere(git_repo) if local is not None else ""
    result.checked.append(f"{label} ({where}{shown}..{req.head or 'working tree'})")
    mode = "pr" if pr is not None else "local" if local is not None else "diff"
    result.info.update(
        mode=mode, repo=repo, pr=pr, base=base,
        merge_base=merge_base, head=req.head or "working tree",
        base_entries=len(a.base.entries), head_entries=len(a.head.entries),
        new_entries=[e.number for e in a.new_entries],
        corrections=[h.number for _, h in a.corrections],
        sources={label: (a.head.text or "")},
    )
    return result


def _which_base(req: ValidateRequest, git_repo: GitRepo | None, pr: int | None,
                base: str | None) -> tuple[str | None, str | None, str | None]:
    """(the base to compare with, the same when it is local mode's, why the file is judged
    standalone when there is none)."""
    if base is None and pr is not None:
        base = _default_base(git_repo)
    if base is None and not req.no_git and git_repo is not None:
        local, why = _local_base(git_repo, req.path)
        return local, local, why
    return base, None, None


def _pr_and_base(req: ValidateRequest) -> tuple[int | None, str | None]:
    """--pr and --base, else the pull_request event's number and base SHA; usage errors
    for option combinations that make no sense."""
    event = req.actions.pull_request() if req.pr is None or req.base is None else None
    pr = req.pr
    if pr is None and event is not None and isinstance(event.get("number"), int):
        pr = event["number"]
    base = req.base
    if base is None and pr is not None:
        ev_base = (event or {}).get("base", {}) if event else {}
        base = ev_base.get("sha") if isinstance(ev_base, dict) else None
    if req.head is not None and base is None:
        raise UsageError("--head needs --base", hint="diff mode compares BASE..HEAD")
    if req.fix and req.head is not None:
        raise UsageError("--fix edits the working tree; it cannot be combined with --head",
                         hint="drop --head (--fix edits the working tree) or drop --fix")
    return pr, base


def _diff_inputs(req: ValidateRequest, git_repo: GitRepo, base: str
                 ) -> tuple[str, bytes, bytes, list[str] | None]:
    """(merge-base, changelog there, changelog at the head, master-config keys at the
    head); the head is the working tree unless --head."""
    rel = git_repo.relpath(req.path if req.path.is_absolute() else Path.cwd() / req.path)
    merge_base = git_repo.merge_base(base, req.head or "HEAD")
    base_raw = _blob(git_repo, merge_base, rel) or b""
    if req.head is None:
        return (merge_base, base_raw, read_bytes(req.path),
                _master_keys_worktree(git_repo.root, req.configs))
    shown = _blob(git_repo, req.head, rel)
    if shown is None:
        raise InputError(f"{rel} does not exist at {req.head}",
                         hint="check PATH and --head (the file is read from that commit)")
    master = (_master_keys_worktree(git_repo.root, req.configs) if req.configs
              else _master_keys_at(git_repo, req.head))
    return merge_base, base_raw, shown, master


def _fix(req: ValidateRequest, a: ChangeAnalysis, opts: Options, base_raw: bytes,
         base: str, result: Result) -> ChangeAnalysis:
    """--fix: write the safe fixes and re-validate, or say why nothing changed."""
    from inferencex_tools.changelog.fix import fix_change

    label = str(req.path)
    outcome = fix_change(a, opts)
    if outcome.data is not None:
        atomic_write(req.path, outcome.data)
        result.fixes.extend(outcome.applied)
        return analyze_change(base_raw, outcome.data, label, opts,
                              base_label=f"{label}@{base}", base_parsed=a.base)
    if outcome.refused and not a.ok:
        from inferencex_tools.changelog.rules import FIX_REFUSED

        result.add(FIX_REFUSED.at(label, None, None, f"--fix changed nothing: "
                                  f"{outcome.refused}"))
    return a


# where a local branch's work starts: its upstream, else the remote's default branch, else
# the local default branch (a branch made from the local main, no remote)
_UPSTREAMS = ("@{upstream}", *DEFAULT_BRANCHES)


def _local_base(git_repo: GitRepo, path: Path) -> tuple[str | None, str | None]:
    """Standalone in a git work tree (pre-commit, a local branch): the commit the local
    work starts from — merge-base with the upstream, else HEAD itself (staged and
    working-tree changes are new) — or (None, why the whole file is judged standalone):
    the repository does not track the file (an untracked or ignored file, e.g. in a
    folder of an enclosing repository), it is not at that commit, or the repository has
    no commit yet."""
    from inferencex_tools.errors import GitError

    try:
        rel = git_repo.relpath(path if path.is_absolute() else Path.cwd() / path)
    except GitError:
        return None, f"outside the git repository at {git_repo.root}"
    if not _tracked(git_repo, rel):
        return None, (f"not tracked by the git repository at {git_repo.root} (an untracked "
                      "or ignored file)")
    try:
        head = git_repo.resolve("HEAD")
    except GitError:
        return None, f"the git repository at {git_repo.root} has no commit yet"
    base = head
    for cand in _UPSTREAMS:
        try:
            base = git_repo.merge_base(cand, head)
            break
        except GitError:
            continue
    if git_repo.show(base, rel) is None:
        return None, f"new in the git repository at {git_repo.root} (not at {base[:12]})"
    return base, None


def _tracked(git_repo: GitRepo, rel: str) -> bool:
    """Whether the repository's index holds ``rel`` (staged, committed or in a conflict)."""
    code, out, _ = git_repo.git("ls-files", "-z", "--", rel, check=False)
    # an unreadable index (code != 0): the file is judged on its own
    return code == 0 and rel in out.split("\0")


def _elsewhere(git_repo: GitRepo) -> str:
    """``in the git repository at ROOT, `` when the file's repository is not the one of
    the current directory (a symlinked folder, a path into another work tree)."""
    here = Path.cwd().resolve()
    root = git_repo.root.resolve()
    return "" if here == root or root in here.parents else f"git repository at {root}: "


def _default_base(git_repo: GitRepo | None) -> str:
    from inferencex_tools.io.git import default_branch

    if git_repo is None:
        raise UsageError("--pr needs --base outside a pull_request event",
                         hint="e.g. --base origin/main")
    base = default_branch(git_repo.resolve)
    if base is None:
        raise UsageError("--pr needs --base (no origin/main, origin/master, main or master "
                         "here)", hint="e.g. --base origin/main")
    return base


def _standalone(req: ValidateRequest, label: str, repo: str, result: Result, *,
                why: str | None = None) -> Result:
    if req.fix:
        raise UsageError("--fix needs --base or a git work tree (it fixes the new entries "
                         "of a change)",
                         hint="e.g. ixtool changelog validate --base origin/main --fix")
    raw = read_bytes(req.path)
    cl = validate_standalone(raw, label, Options(repo=repo))
    folded = fold_history_quirks(cl.findings, listed=req.history)
    result.extend(folded.findings)
    result.checked.append(f"{label} (standalone: {why})" if why else label)
    result.info.update(mode="standalone", repo=repo, entries=len(cl.entries),
                       sources={label: cl.text or ""})
    if why:
        result.info["standalone_because"] = why
    if folded.quirks:
        result.info["history_quirks"] = folded.quirks
        result.info["unlisted"] = folded.summary()
    return result
