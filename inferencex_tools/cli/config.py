"""``ixtool config …``: check master configs and runners.yaml."""

from __future__ import annotations

from pathlib import Path

import typer

from inferencex_tools.cli.common import (
    BASELINE_OPTION,
    FORMAT_OPTION,
    WRITE_BASELINE_OPTION,
    Adoption,
    Format,
    emit,
)

app = typer.Typer(
    help="Check the master configs (configs/*-master.yaml) and configs/runners.yaml.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("validate")
def validate(
    files: list[Path] | None = typer.Argument(
        None, help="Master config files and/or runners.yaml (default: configs/*-master.yaml "
        "and configs/runners.yaml of this repository)."),
    runner_config: Path | None = typer.Option(
        None, "--runner-config", "--runners", help="runners.yaml to check labels against."),
    scripts_dir: Path | None = typer.Option(
        None, "--scripts-dir",
        help="Repository root holding benchmarks/ (default: the parent of the configs "
        "directory, else the repository holding them). Without it, benchmark scripts are "
        "not checked (warning SW405)."),
    base: str | None = typer.Option(
        None, "--base",
        help="PR mode: report only findings that are not already present at the "
        "merge-base of BASE and HEAD (matched by rule, file and message, not by line); "
        "config keys not present at BASE are new, and an unknown runner label on a new "
        "key is an error (warning otherwise)."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too."),
    baseline: Path | None = BASELINE_OPTION,
    write_baseline: bool = WRITE_BASELINE_OPTION,
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Validate master configs against schemas/master-config.schema.json plus the
    semantic rules (SW…): typed values, positivity, concurrency form, topology vs
    multinode, KV offload, component scope, runner labels, benchmark scripts.

    Exit codes: 0 clean (warnings allowed), 1 findings, 2 usage or input error.

    \b
    Examples:
      ixtool config validate
      ixtool config validate --base origin/main --format github
    """
    from inferencex_tools.cli.progress import ProgressLine
    from inferencex_tools.sweep.service import run_config_validate

    with ProgressLine("config validate") as progress:
        result, at_base = run_config_validate(list(files) if files else None, runner_config,
                                              scripts_dir, base, progress=progress)
    from inferencex_tools.report.adopt import TrustedBase

    adoption = Adoption(baseline, write_baseline, at_base, f"at {base}",
                        pr_context=TrustedBase(base) if base else None)
    raise typer.Exit(emit(result, fmt, strict=strict, adoption=adoption))
