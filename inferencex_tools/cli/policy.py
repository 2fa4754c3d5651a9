"""``ixtool policy …``: the golden acceptance-length policy (check, golden)."""

from __future__ import annotations

import json
from enum import StrEnum
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
from inferencex_tools.cli.nargs import NargsCommand

app = typer.Typer(
    help="Check speculative-decoding recipes against the golden acceptance-length policy.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


class Thinking(StrEnum):
    on = "on"
    off = "off"


REGISTRY_OPTION = typer.Option(
    None, "--registry",
    help="Golden-AL registry (default: golden_al_distribution/registry.yaml under --root).",
)
CURVES_OPTION = typer.Option(
    None, "--curves-dir",
    help="Directory holding the curve files named by the registry (default: the "
    "registry's directory).",
)
ROOT_OPTION = typer.Option(
    Path("."), "--root", help="Repository root (scripts resolve relative to it).",
)


@app.command("golden")
def golden_cmd(
    model: str = typer.Argument(..., help="Model prefix (minimaxm3) or curve model key."),
    k: int = typer.Option(..., "--k", min=1, max=8, help="Draft length K."),
    thinking: Thinking = typer.Option(..., "--thinking", help="Thinking mode: on or off."),
    draft: str | None = typer.Option(None, "--draft", help="Draft model id or path."),
    method: str | None = typer.Option(None, "--method", help="mtp, eagle, eagle3 or dspark."),
    sample: str | None = typer.Option(
        None, "--sample", help="Draft sample method (e.g. probabilistic; default: default)."),
    registry: Path | None = REGISTRY_OPTION,
    curves_dir: Path | None = CURVES_OPTION,
    root: Path = ROOT_OPTION,
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Print the golden AL for MODEL/draft/K/mode in each engine's unit.

    Exit codes: 0 printed, 2 usage or input error (unknown or ambiguous model/draft, missing curve).

    \b
    Example:
      ixtool policy golden minimaxm3 --k 3 --thinking on
    """
    from inferencex_tools.policy.golden import golden
    from inferencex_tools.policy.store import open_store

    store = open_store(registry, curves_dir, root=root)
    ans = golden(store, model, k=k, thinking=thinking.value, draft=draft, method=method,
                 sample=sample)
    if fmt is Format.json:
        typer.echo(json.dumps(ans.to_dict(), indent=2))
        return
    typer.echo(f"{ans.entry.label()}, draft {ans.entry.draft or '(native head)'}, "
               f"{ans.mode}, K={ans.k}: golden AL {ans.al:.2f}")
    if ans.source_run:
        typer.echo(f"source run: {ans.source_run}")
    for v in ans.values:
        typer.echo(f"  {v.engine:<7} {v.setting:<70} {v.value:g}")


@app.command("check", cls=NargsCommand)
def check_cmd(
    config_keys: list[str] | None = typer.Option(
        None, "--config-keys", metavar="KEY...",
        help="Only these config keys (globs, '*' any run)."),
    configs: list[Path] | None = typer.Option(
        None, "--configs", metavar="FILE...",
        help="Master config files (default: configs/*-master.yaml)."),
    registry: Path | None = REGISTRY_OPTION,
    curves_dir: Path | None = CURVES_OPTION,
    root: Path = ROOT_OPTION,
    timeout: float = typer.Option(60.0, "--timeout", min=1.0, help="Seconds per trace."),
    jobs: int = typer.Option(
        0, "--jobs", "-j", min=0, max=64,
        help="Parallel traces (default 0: three per CPU; traces mostly wait on processes)."),
    all_evals: bool = typer.Option(
        False, "--all-evals",
        help="Trace EVAL_ONLY=true at every concurrency (default: the top one per entry)."),
    rows: bool = typer.Option(
        False, "--rows", help="Text format: print the verdict table (one line per traced row) "
        "before the findings."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too."),
    allow_unsandboxed: bool = typer.Option(
        False, "--allow-unsandboxed",
        help="Trace the recipes even when no sandbox (user namespaces, bubblewrap) is "
        "available: they then run as this user, without isolation (warning PO305). "
        "Without it that case is an error (exit 2)."),
    base: str | None = typer.Option(
        None, "--base", help="PR mode: curves and registry from this ref's merge-base with "
        "HEAD; a curve change is an error (PO109); only rows whose config block, launcher, "
        "script (with what it sources), recipe or curve changed are traced."),
    baseline: Path | None = BASELINE_OPTION,
    write_baseline: bool = WRITE_BASELINE_OPTION,
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Trace every spec-decoding recipe of the master configs and apply the policy.

    Each row of the sweep matrix runs in a sandbox as its job would: the environment
    the repository's workflows give the job, the launcher its runner uses (traced up to
    the benchmark step or the recipe submission), then the benchmark script with
    stubbed servers.  The captured speculative config is checked against the golden
    curve (rules PO…).  Without golden_al_distribution/registry.yaml the registry is
    derived from the curve files (see `ixtool policy init`).

    Exit codes: 0 clean, 1 findings, 2 usage or input error.

    \b
    Example:
      ixtool policy check --config-keys 'minimaxm3-*' --rows
    """
    import os

    from inferencex_tools.cli.progress import ProgressLine
    from inferencex_tools.policy.service import CheckRequest, render_rows, run_check

    with ProgressLine("policy check") as progress:
        result = run_check(CheckRequest(
            root=root, configs=list(configs) if configs else None,
            config_keys=list(config_keys) if config_keys else None, registry=registry,
            curves_dir=curves_dir, timeout=timeout,
            jobs=jobs or 3 * (os.cpu_count() or 1), all_evals=all_evals, base=base,
            isolate=False if os.environ.get("IXTOOL_TRACE_NO_NAMESPACES") == "1" else None,
            allow_unsandboxed=allow_unsandboxed,
            progress=progress if progress.enabled else None,
        ))
    if rows and fmt is Format.text:
        typer.echo(render_rows(result.info.get("rows", [])), nl=False)
    raise typer.Exit(emit(result, fmt, strict=strict,
                          adoption=Adoption(baseline, write_baseline)))


@app.command("trace")
def trace_cmd(
    script: str = typer.Argument(..., help="Benchmark script, relative to --root."),
    assignments: list[str] | None = typer.Option(
        None, "--set", help="VAR=VALUE for the script's environment; repeatable."),
    root: Path = ROOT_OPTION,
    timeout: float = typer.Option(60.0, "--timeout", min=1.0, help="Seconds."),
) -> None:
    """Trace one script in the sandbox and print what it launched (JSON).

    Every stubbed call is listed with its argv, the variables the script itself set, and
    for server launches the parsed speculative config.

    Exit codes: 0 the script exited 0, 1 it failed or timed out, 2 usage or input error.

    \b
    Example:
      ixtool policy trace benchmarks/single_node/fixed_seq_len/dsr1_fp4_b200_mtp.sh --set CONC=64
    """
    from inferencex_tools.policy.service import trace_report

    rep = trace_report(root, script, list(assignments or []), timeout=timeout)
    typer.echo(json.dumps(rep, indent=2))
    raise typer.Exit(0 if rep["returncode"] == 0 and not rep["timed_out"] else 1)


@app.command("init")
def init_cmd(
    curves_dir: Path | None = CURVES_OPTION,
    root: Path = ROOT_OPTION,
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write here (default: golden_al_distribution/"
        "registry.yaml under --root)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing registry."),
) -> None:
    """Write the golden-AL registry derived from the repository, for review.

    The derivation reads the curve files (their top-level key and header), the curves'
    README and the draft ids the recipes launch.  What it cannot decide is reported
    (PO108) and left out.  Once committed, the registry wins over derivation.

    Exit codes: 0 written, 1 written with ambiguities, 2 usage or input error (file exists).

    \b
    Example:
      ixtool policy init --output /tmp/registry.yaml
    """
    from inferencex_tools.policy.service import run_init

    res = run_init(root, curves_dir=curves_dir, output=output, force=force)
    typer.echo(f"wrote {res.path}")
    for f in res.findings:
        typer.echo(f"{f.rule} {f.severity.value}: {f.message}", err=True)
    raise typer.Exit(1 if any(f.severity.value == "error" or f.rule == "PO108"
                              for f in res.findings) else 0)


@app.command("curves")
def curves_cmd(
    registry: Path | None = REGISTRY_OPTION,
    curves_dir: Path | None = CURVES_OPTION,
    root: Path = ROOT_OPTION,
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Validate the curve files and the registry against each other.

    Every *.yaml in the curves directory must pass schemas/golden-al.schema.json, carry
    its source run URL and be covered by a registry row; every registry row whose curve
    file is present must name its model key.

    Exit codes: 0 clean, 1 findings, 2 usage or input error (no or invalid registry).

    \b
    Example:
      ixtool policy curves --strict
    """
    from inferencex_tools.policy.service import run_curves

    raise typer.Exit(emit(run_curves(root, registry, curves_dir), fmt, strict=strict))
