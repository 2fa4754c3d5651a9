"""``ixtool changelog …``: validate (and, later, canonicalize / resolve-conflict / add)."""

from __future__ import annotations

from pathlib import Path

import typer

from inferencex_tools.cli.common import FORMAT_OPTION, Format, emit

app = typer.Typer(
    help="Check and maintain perf-changelog.yaml.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

PATH_ARG = typer.Argument(
    Path("perf-changelog.yaml"), help="The changelog file (default: ./perf-changelog.yaml)."
)


@app.command("validate")
def validate(
    path: Path = PATH_ARG,
    base: str | None = typer.Option(
        None, "--base", help="Diff mode: compare against the merge-base of BASE and HEAD."
    ),
    head: str | None = typer.Option(
        None, "--head", help="Diff mode: the head ref (default: the working tree)."
    ),
    pr: int | None = typer.Option(
        None, "--pr", min=1,
        help="PR mode: the pull-request number (default: from $GITHUB_EVENT_PATH of a "
        "pull_request event). New entries' pr-link must be XXX or this PR's URL.",
    ),
    repo: str | None = typer.Option(
        None, "--repo",
        help="Canonical OWNER/NAME for pr-links (default: the origin remote, else "
        "SemiAnalysisAI/InferenceX).",
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
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Validate perf-changelog.yaml: standalone, against a base ref, or for a PR.

    \b
    Modes:
      standalone   no --base: file invariants and schema for the whole file;
                   historical quirks are warnings.
      diff         --base REF [--head REF]: the change since merge-base(BASE, HEAD)
                   must append well-formed entries only (main mode: canonical links).
      PR           diff + --pr N: new links must be XXX or this PR's URL.

    Exit codes: 0 clean, 1 findings, 2 usage or input error.
    """
    from inferencex_tools.changelog.service import ValidateRequest, run_validate

    result = run_validate(
        ValidateRequest(
            path=path, base=base, head=head, pr=pr, repo=repo,
            configs=list(configs) if configs else None, fix=fix,
        )
    )
    raise typer.Exit(emit(result, fmt, strict=strict))
