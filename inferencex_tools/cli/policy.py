"""``ixtool policy …``: the golden acceptance-length policy (check, golden)."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

import typer

from inferencex_tools.cli import complete
from inferencex_tools.cli.common import (
    BASELINE_OPTION,
    FORMAT_OPTION,
    WRITE_BASELINE_OPTION,
    Adoption,
    Format,
    emit,
    info,
    repo_dir,
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
    None, "--root", help="Repository root (scripts resolve relative to it; default: the "
    "repository the current directory is in).",
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
    root: Path | None = ROOT_OPTION,
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Print the golden AL for MODEL/draft/K/mode in each engine's unit.

    Exit codes: 0 printed, 2 usage or input error (unknown or ambiguous model/draft, missing curve).

    \b
    Example (minimaxm3 has two curves, one per draft head: --draft says which):
      ixtool policy golden minimaxm3 --k 3 --thinking on --draft Inferact/MiniMax-M3-EAGLE3-GQA
    """
    from inferencex_tools.policy.golden import golden
    from inferencex_tools.policy.store import open_store

    store = open_store(registry, curves_dir, root=repo_dir(root))
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
        help="Only these config keys (globs, '*' any run).",
        autocompletion=complete.config_keys),
    configs: list[Path] | None = typer.Option(
        None, "--configs", metavar="FILE...",
        help="Master config files (default: configs/*-master.yaml)."),
    registry: Path | None = REGISTRY_OPTION,
    curves_dir: Path | None = CURVES_OPTION,
    root: Path | None = ROOT_OPTION,
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
    explain: bool = typer.Option(
        False, "--explain", help="Text format with --base: print the changed files and "
        "why each traced key was traced (the changed file its launch reaches) before the "
        "findings."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too."),
    allow_unsandboxed: bool = typer.Option(
        False, "--allow-unsandboxed",
        help="Trace the recipes even when no sandbox (user namespaces, bubblewrap) is "
        "available: they then run without isolation (as nobody when ixtool is root) and "
        "the run fails with PO305 whatever the verdicts. Without it that case is exit 2."),
    base: str | None = typer.Option(
        None, "--base", help="PR mode: curves, registry, settings and baseline from this "
        "ref's merge-base with HEAD (a curve change is named by PO109, a settings change "
        "by CI601); only rows whose config block, launcher, script (with what it "
        "sources), recipe or curve changed are traced."),
    trace_cache: Path | None = typer.Option(
        None, "--trace-cache", envvar="IXTOOL_TRACE_CACHE", metavar="DIR",
        help="Reuse the result of a trace that read the same repository bytes (same "
        "arguments, same ixtool sandbox, same host) from DIR; a whole check (no --base) "
        "also keeps its traces there. Namespace isolation only (the one that records "
        "what a trace reads)."),
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
    from inferencex_tools.policy.service import (
        CheckRequest,
        render_rows,
        render_selection,
        run_check,
    )

    root = repo_dir(root)
    if _unborn(root, base):
        info("policy check: --base HEAD before the first commit: nothing is at the base, "
             "every row is new (the whole check)")
        base = None
    with ProgressLine("policy check") as progress:
        result = run_check(CheckRequest(
            root=root, configs=list(configs) if configs else None,
            config_keys=list(config_keys) if config_keys else None, registry=registry,
            curves_dir=curves_dir, timeout=timeout,
            jobs=jobs or 3 * (os.cpu_count() or 1), all_evals=all_evals, base=base,
            isolate=False if os.environ.get("IXTOOL_TRACE_NO_NAMESPACES") == "1" else None,
            allow_unsandboxed=allow_unsandboxed,
            progress=progress if progress.enabled else None,
            trace_cache=trace_cache, trace_cache_write=base is None,
        ))
    if explain and fmt is Format.text:
        typer.echo(render_selection(result.info.get("base")), nl=False)
    if rows and fmt is Format.text:
        typer.echo(render_rows(result.info.get("rows", [])), nl=False)
    from inferencex_tools.report.adopt import TrustedBase

    raise typer.Exit(emit(result, fmt, strict=strict, adoption=Adoption(
        baseline, write_baseline, pr_context=TrustedBase(base) if base else None)))


def _unborn(root: Path, base: str | None) -> bool:
    """``--base HEAD`` where HEAD has no commit yet (pre-commit on a new repository)."""
    if base != "HEAD":
        return False
    from inferencex_tools.errors import GitError
    from inferencex_tools.io.git import GitRepo

    try:
        return GitRepo.open(root).head_unborn
    except GitError:
        return False


@app.command("trace")
def trace_cmd(
    script: str = typer.Argument(..., help="Benchmark script, relative to --root."),
    assignments: list[str] | None = typer.Option(
        None, "--set", help="VAR=VALUE for the script's environment; repeatable."),
    root: Path | None = ROOT_OPTION,
    timeout: float = typer.Option(60.0, "--timeout", min=1.0, help="Seconds."),
) -> None:
    """Trace one script in the sandbox and print what it launched (JSON).

    Every stubbed call is listed with its argv, the variables the script itself set, and
    for server launches the parsed speculative config.

    The script gets only the variables given (a job's other variables are unset) and
    sees the checkout also at /workspace, where the launchers mount it: `ixtool launch
    render --config-key KEY` traces a matrix row with its job's whole environment.

    Exit codes: 0 the script exited 0, 1 it failed or timed out, 2 usage or input error.

    \b
    Example (the variables the script checks for):
      ixtool policy trace benchmarks/single_node/fixed_seq_len/dsr1_fp4_b200_mtp.sh \\
        --set MODEL=deepseek-ai/DeepSeek-R1-0528 --set TP=8 --set EP_SIZE=8 \\
        --set DP_ATTENTION=false --set CONC=64 --set ISL=1024 --set OSL=1024 \\
        --set RANDOM_RANGE_RATIO=0.8 --set RESULT_FILENAME=dsr1_conc64
    """
    from inferencex_tools.policy.service import trace_report

    rep = trace_report(repo_dir(root), script, list(assignments or []), timeout=timeout)
    typer.echo(json.dumps(rep, indent=2))
    raise typer.Exit(0 if rep["returncode"] == 0 and not rep["timed_out"] else 1)


@app.command("init")
def init_cmd(
    curves_dir: Path | None = CURVES_OPTION,
    root: Path | None = ROOT_OPTION,
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
    Example (writes golden_al_distribution/registry.yaml; review it, then commit it):
      ixtool policy init
    """
    from inferencex_tools.policy.service import run_init

    res = run_init(repo_dir(root), curves_dir=curves_dir, output=output, force=force)
    typer.echo(f"wrote {res.path}")
    for f in res.findings:
        typer.echo(f"{f.rule} {f.severity.value}: {f.message}", err=True)
    raise typer.Exit(1 if any(f.severity.value == "error" or f.rule == "PO108"
                              for f in res.findings) else 0)


curves_app = typer.Typer(rich_markup_mode=None)
app.add_typer(curves_app, name="curves")


@curves_app.callback(invoke_without_command=True)
def curves_cmd(
    ctx: typer.Context,
    registry: Path | None = REGISTRY_OPTION,
    curves_dir: Path | None = CURVES_OPTION,
    root: Path | None = ROOT_OPTION,
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Validate the curve files and the registry against each other.

    Every *.yaml in the curves directory must pass schemas/golden-al.schema.json, carry
    its source run URL and be covered by a registry row; every registry row whose curve
    file is present must name its model key.  `ixtool policy curves import` turns a
    collection run's artifact into a curve file.

    Exit codes: 0 clean, 1 findings, 2 usage or input error (no or invalid registry).

    \b
    Example:
      ixtool policy curves --strict
    """
    if ctx.invoked_subcommand is not None:
        return
    from inferencex_tools.policy.service import run_curves

    raise typer.Exit(emit(run_curves(repo_dir(root), registry, curves_dir), fmt,
                          strict=strict))


@curves_app.command("import")
def curves_import_cmd(
    run_id: str = typer.Argument(
        ..., metavar="RUN_ID", help="The speedbench-al.yml run (its id, from …/actions/runs/ID)."),
    artifacts: Path | None = typer.Option(
        None, "--artifacts", metavar="DIR",
        help="Offline: the directory `gh run download RUN_ID -D DIR` wrote (else the "
        "artifacts are downloaded through the GitHub API)."),
    repo: str | None = typer.Option(
        None, "--repo", help="OWNER/NAME of the run (default: the origin remote of --root)."),
    api_url: str | None = typer.Option(
        None, "--api-url", help="GitHub API root (default: $GITHUB_API_URL or "
        "https://api.github.com)."),
    root: Path | None = ROOT_OPTION,
    output: Path | None = typer.Option(
        None, "--output", "-o", metavar="FILE",
        help="Write here (default: golden_al_distribution/<prefix>_<method>.yaml under "
        "--root)."),
    prefix: str | None = typer.Option(
        None, "--prefix", help="The model prefix of the artifact to import "
        "(speedbench-reference-al-<prefix>), when the run has several."),
    image: str | None = typer.Option(
        None, "--image", help="The collection's image (default: the vLLM version its "
        "server logs print)."),
    model: str | None = typer.Option(
        None, "--model", help="The collected model id (default: the matrix's model key)."),
    force: bool = typer.Option(
        False, "--force", help="Replace an existing curve file whose content differs."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Turn a SpeedBench AL collection run into a golden curve file, for a reviewed PR.

    The run's speedbench-reference-al-<prefix> artifact (the collector's matrix) is
    written in the repository's curve format: the source run URL, a provenance line
    (run, image, model, category), the collector's header, the values unchanged.
    Importing the same run again gives the same bytes.  A cell the collection did not
    measure (N/A), or a value the curve rules refuse (PO101-PO104), is AL402; an existing
    different file is AL403 without --force.

    Exit codes: 0 written or unchanged, 1 findings, 2 usage or input error.

    \b
    Examples:
      ixtool policy curves import 28061204145 --artifacts run
      ixtool policy curves import 28061204145 --repo SemiAnalysisAI/InferenceX
    """
    from inferencex_tools.al.curves import Provenance, import_curve
    from inferencex_tools.cli.al import run_of
    from inferencex_tools.io.artifacts import Limits, run_directory

    root = repo_dir(root)
    rid, slug = run_of(run_id, repo, root, why="the curve names its source run URL")
    prov = Provenance(rid, f"https://github.com/{slug}/actions/runs/{rid}", image, model)
    if artifacts is not None:
        result = import_curve(root, run_directory(artifacts, Limits()), prov, prefix=prefix,
                              output=output, force=force)
    else:
        from inferencex_tools.al.curves import import_run
        from inferencex_tools.io.github import Forge, api_url_from_env, token_from_env

        forge = Forge(slug, token=token_from_env(), api_url=api_url_from_env(api_url))
        result = import_run(root, forge, prov, prefix=prefix, output=output, force=force)
    raise typer.Exit(emit(result, fmt))
