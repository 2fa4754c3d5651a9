"""``ixtool changelog …``: validate (and, later, canonicalize / resolve-conflict / add)."""

from __future__ import annotations

from pathlib import Path

import typer

from inferencex_tools.cli import complete
from inferencex_tools.cli.common import (
    BASELINE_OPTION,
    FORMAT_OPTION,
    WRITE_BASELINE_OPTION,
    Adoption,
    Format,
    actions_env,
    emit,
    pr_number_arg,
)
from inferencex_tools.report.findings import Result

app = typer.Typer(
    help="Check and maintain perf-changelog.yaml.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

PATH_ARG = typer.Argument(
    Path("perf-changelog.yaml"), help="The changelog file (default: ./perf-changelog.yaml)."
)
VALIDATE_PATH_ARG = typer.Argument(
    None, help="The changelog file (default: ./perf-changelog.yaml, else the one at the "
    "repository root).")


@app.command("validate")
def validate(
    path: Path | None = VALIDATE_PATH_ARG,
    base: str | None = typer.Option(
        None, "--base", help="Diff mode: compare against the merge-base of BASE and HEAD."
    ),
    head: str | None = typer.Option(
        None, "--head", help="Diff mode: the head ref (default: the working tree)."
    ),
    pr: int | None = typer.Option(
        None, "--pr", parser=pr_number_arg,
        help="PR mode: the pull-request number (default: from $GITHUB_EVENT_PATH of a "
        "pull_request event). New entries' pr-link must be XXX or this PR's URL.",
    ),
    repo: str | None = typer.Option(
        None, "--repo",
        help="Canonical OWNER/NAME for pr-links (default: $GITHUB_REPOSITORY, else the "
        "upstream/origin GitHub remote, else SemiAnalysisAI/InferenceX).",
    ),
    configs: list[Path] | None = typer.Option(
        None, "--configs",
        help="Master config files for the config-key check (default: configs/*-master.yaml "
        "at the head).",
    ),
    fix: bool = typer.Option(
        False, "--fix",
        help="Apply safe fixes to new entries (placeholder links, misplaced block, "
        "separators, final newline); never touches history. Written atomically.",
    ),
    no_git: bool = typer.Option(
        False, "--no-git",
        help="Standalone on the whole file even inside a git work tree (history included)."),
    history: bool = typer.Option(
        False, "--history",
        help="Standalone: list history's quirks (trailing whitespace, odd separators, "
        "non-canonical or folded links, a blank last line) one by one, as notes; by default "
        "they are only counted on the summary line. They never fail a run."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too."),
    baseline: Path | None = BASELINE_OPTION,
    write_baseline: bool = WRITE_BASELINE_OPTION,
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Validate perf-changelog.yaml: standalone, against a base ref, or for a PR.

    \b
    Modes:
      local        no --base, in a git work tree (pre-commit): entries not in the
                   upstream's merge-base (staged, committed but unpushed) are new
                   and judged like a PR's (links XXX or a PR URL, config keys,
                   markers, appended at the end); history is left alone.
      standalone   no --base outside git (or --no-git): file invariants and schema
                   for the whole file; history's quirks (immutable bytes) are
                   counted on the summary line, listed with --history, never fail.
      diff         --base REF [--head REF]: the change since merge-base(BASE, HEAD)
                   must append well-formed entries only (main mode: canonical links).
      PR           diff + --pr N: new links must be XXX or this PR's URL.

    Exit codes: 0 clean, 1 findings, 2 usage or input error.

    \b
    Examples:
      ixtool changelog validate
      ixtool changelog validate --base origin/main --pr 1234 --fix
    """
    from inferencex_tools.changelog.service import (
        ValidateRequest,
        default_changelog,
        run_validate,
    )

    result = run_validate(
        ValidateRequest(
            path=path or default_changelog(), base=base, head=head, pr=pr, repo=repo,
            configs=list(configs) if configs else None, fix=fix, actions=actions_env(),
            no_git=no_git, history=history,
        )
    )
    from inferencex_tools.report.adopt import TrustedBase

    context = (TrustedBase(result.info["merge_base"], head)
               if result.info.get("mode") in ("pr", "diff") else None)
    raise typer.Exit(emit(result, fmt, strict=strict, adoption=Adoption(
        baseline, write_baseline, pr_context=context)))


# ------------------------------------------------------------------ merge operations

PR_REQUIRED = typer.Option(..., "--pr", parser=pr_number_arg,
                           help="The pull-request number.")
REPO_OPTION = typer.Option(
    None, "--repo",
    help="Canonical OWNER/NAME for pr-links (default: the origin remote, else "
    "$GITHUB_REPOSITORY, else SemiAnalysisAI/InferenceX).",
)


def _say(result: Result, fmt: Format | None = None) -> None:
    """What the command did, once: a line of the text output, else on stderr (machine
    formats keep stdout to themselves)."""
    from inferencex_tools.cli.common import info

    message = result.info.get("message")
    if not message:
        return
    if fmt is Format.text:
        if message not in result.done and message not in result.fixes:
            result.done.append(message)
    else:
        info(f"ixtool: {message}")


@app.command("canonicalize")
def canonicalize_cmd(
    path: Path = PATH_ARG,
    pr: int = PR_REQUIRED,
    base: str | None = typer.Option(
        None, "--base", help="Base branch (default: origin/main, origin/HEAD or main); the "
        "change is taken from merge-base(BASE, HEAD) to the working-tree file.",
    ),
    repo: str | None = REPO_OPTION,
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Replace the XXX placeholder links of the PR's new entries with the PR's URL.

    Validates the change in PR mode first and the result afterwards; writes the
    file atomically, only when something changed.  Idempotent: a second run reports
    "already canonical".  A link folded onto a continuation line is rewritten onto
    one line.  Entries written mid-file, odd separators and blank lines (layout warnings)
    are laid out as `changelog validate --fix` does.

    Exit codes: 0 done (or nothing to do), 2 refused (the reason and a hint are printed;
    nothing is written), usage or input error.

    \b
    Example:
      ixtool changelog canonicalize --pr 1234
    """
    from inferencex_tools.changelog.merge_service import CanonicalizeRequest, run_canonicalize

    result = run_canonicalize(CanonicalizeRequest(path=path, pr=pr, base=base, repo=repo,
                                                  actions=actions_env()))
    _say(result, fmt)
    raise typer.Exit(emit(result, fmt))


@app.command("resolve-conflict")
def resolve_conflict_cmd(
    path: Path = PATH_ARG,
    pr: int = PR_REQUIRED,
    base_file: Path | None = typer.Option(
        None, "--base", help="The merge-base version (instead of git index stage 1)."
    ),
    ours_file: Path | None = typer.Option(
        None, "--ours", help="The PR side (instead of git index stage 2)."
    ),
    theirs_file: Path | None = typer.Option(
        None, "--theirs", help="The main side (instead of git index stage 3)."
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write the resolution here (default: PATH)."
    ),
    repo: str | None = REPO_OPTION,
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Resolve a perf-changelog.yaml merge conflict: main's bytes + the PR's entries.

    Reads the three conflict stages from the git index (1 merge-base, 2 ours = the PR
    branch, 3 theirs = main; i.e. main was merged into the PR branch), or the three
    files given with --base/--ours/--theirs.  Main's bytes are kept exactly; the PR's
    appended entries are re-appended with the PR's URL (or its pr-link corrections
    re-applied).  A PR entry is dropped only when main already holds this PR's entry.
    Writes atomically; `git add PATH` afterwards.

    Exit codes: 0 resolved, 2 refused (the reason and a hint are printed; nothing is
    written), usage or input error.

    \b
    Example:
      ixtool changelog resolve-conflict --pr 1234 && git add perf-changelog.yaml
    """
    from inferencex_tools.changelog.merge_service import ResolveRequest, run_resolve

    result = run_resolve(ResolveRequest(
        path=path, pr=pr, repo=repo, base_file=base_file, ours_file=ours_file,
        theirs_file=theirs_file, output=output, actions=actions_env(),
    ))
    _say(result, fmt)
    raise typer.Exit(emit(result, fmt))


@app.command("merge-driver")
def merge_driver_cmd(
    ancestor: Path = typer.Argument(..., help="%O: the merge-base version (temp file)."),
    current: Path = typer.Argument(..., help="%A: the current version; receives the result."),
    other: Path = typer.Argument(..., help="%B: the other branch's version (temp file)."),
    pathname: str = typer.Argument("perf-changelog.yaml", help="%P: the path in the repo."),
    pr: int | None = typer.Option(
        None, "--pr", parser=pr_number_arg,
        help="The PR number (default: $IXTOOL_PR, else the "
        "pull_request event of GitHub Actions).",
    ),
    pr_side: str = typer.Option(
        "ours", "--pr-side",
        help="Which side is the PR branch: ours (main merged into the PR branch, the "
        "default) or theirs (the PR branch merged into main).",
    ),
    repo: str | None = REPO_OPTION,
) -> None:
    """Git merge driver for perf-changelog.yaml (see docs/changelog-merge.md).

    \b
    Set up:
      .gitattributes:  perf-changelog.yaml merge=ixtool-changelog
      git config merge.ixtool-changelog.name "ixtool changelog resolver"
      git config merge.ixtool-changelog.driver "ixtool changelog merge-driver %O %A %B %P"

    Writes the resolution into %A and exits 0; on refusal leaves git's usual
    conflict markers in %A, prints the reason and exits non-zero (git then reports
    the conflict).

    Exit codes: 0 resolved, 1 refused (conflict markers left in %A), 2 usage or input error.

    \b
    Example:
      ixtool changelog merge-driver base.yaml ours.yaml theirs.yaml --pr 1234
    """
    from inferencex_tools.changelog.merge_service import DriverRequest, run_driver

    result = run_driver(DriverRequest(
        ancestor=ancestor, current=current, other=other, pathname=pathname, pr=pr,
        repo=repo, pr_side=pr_side, actions=actions_env(),
    ))
    _say(result)
    raise typer.Exit(0 if result.ok else 1)


@app.command("add")
def add_cmd(
    path: Path = PATH_ARG,
    config_key: list[str] | None = typer.Option(
        None, "--config-key", "-k", help="A master-config key or '*' glob (repeatable).",
        autocompletion=complete.config_keys,
    ),
    description: list[str] | None = typer.Option(
        None, "--description", "-d", help="One description line (repeatable)."
    ),
    scenario_type: list[str] | None = typer.Option(
        None, "--scenario-type", help="fixed-seq-len or agentic-coding (repeatable)."
    ),
    pr: int | None = typer.Option(
        None, "--pr", parser=pr_number_arg,
        help="The PR number; the link is its URL (default: XXX, "
        "replaced at merge by canonicalize)."
    ),
    repo: str | None = REPO_OPTION,
    configs: list[Path] | None = typer.Option(
        None, "--configs", help="Master config files (default: configs/*-master.yaml)."
    ),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Append one well-formed entry to perf-changelog.yaml.

    Refuses config keys (and globs) that match no master config.  Non-interactive:
    prompts only when stdin is a terminal and --config-key or --description is
    missing.

    Exit codes: 0 appended, 1 refused (findings), 2 usage or input error.

    \b
    Example:
      ixtool changelog add -k dsr1-fp8-h200-sglang -d 'Bump sglang to 0.5.3'
    """
    import sys

    from inferencex_tools.changelog.merge_service import AddRequest, run_add

    keys = list(config_key or [])
    descriptions = list(description or [])
    if sys.stdin.isatty():
        if not keys:
            keys = typer.prompt("Config keys (space-separated)").split()
        if not descriptions:
            descriptions = [typer.prompt("Description")]
    result = run_add(AddRequest(
        path=path, config_keys=keys, descriptions=descriptions,
        scenario_types=list(scenario_type or []), pr=pr, repo=repo,
        configs=list(configs) if configs else None, actions=actions_env(),
    ))
    _say(result, fmt)
    raise typer.Exit(emit(result, fmt))
