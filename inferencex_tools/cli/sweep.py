"""``ixtool sweep …``: the benchmark matrix (full, test-config, from-changelog, explain).

The reference generator's argv is accepted verbatim after ``ixtool sweep``:
``full-sweep`` is an alias of ``full`` and list options take several values
after one flag (``--config-files a.yaml b.yaml``), as with argparse.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from inferencex_tools.cli import complete
from inferencex_tools.cli.common import pr_number_or_zero_arg, warn
from inferencex_tools.cli.nargs import NargsCommand

app = typer.Typer(
    help="Generate the benchmark sweep matrix (GitHub Actions job rows).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

# ----------------------------------------------------------------------- shared options

CONFIG_FILES = typer.Option(
    None, "--config-files", "--configs", metavar="FILE...",
    help="Master config files, in order (default: configs/*-master.yaml of this repo).")
RUNNER_CONFIG = typer.Option(
    None, "--runner-config", "--runners", metavar="FILE",
    help="runners.yaml (default: configs/runners.yaml).")
NO_EVALS = typer.Option(False, "--no-evals", help="Do not mark eval rows.")
EVALS_ONLY = typer.Option(False, "--evals-only", help="Only the eval rows (eval-only: true).")
ALL_EVALS = typer.Option(False, "--all-evals",
                         help="Expand evals to every concurrency (implies eval-only output).")
NODE_FILTER = typer.Option(
    None, "--runner-node-filter", metavar="SUBSTRING",
    help="Expand rows to the runner nodes whose name contains this substring.")
SCENARIO = typer.Option(None, "--scenario-type", metavar="TYPE...",
                        help="fixed-seq-len and/or agentic-coding (default: both).")
SEQ_LENS = typer.Option(None, "--seq-lens", metavar="SEQ...",
                        help="1k1k and/or 8k1k (fixed-seq-len only).")
OUTPUT = typer.Option(None, "--output", "-o",
                      help="Write the JSON to this file (atomically) instead of stdout.")
GH_OUTPUT = typer.Option(
    False, "--github-output",
    help="Also write the matrix as compact JSON to $GITHUB_OUTPUT (output 'matrix'; "
    "sharded into matrix_1, matrix_2, … over 256 rows or 1 MB).")
SUMMARY = typer.Option(
    False, "--summary",
    help="Print a jobs-per-config table (scenario, GPUs, est. GPU-hours) to stderr and "
    "$GITHUB_STEP_SUMMARY.")


def _finish(matrix: Any, output: Path | None, github_output: bool, summary: bool) -> None:
    from inferencex_tools.sweep.generate import dumps

    text = dumps(matrix.rows)
    if not matrix.rows:  # printed as the reference prints it, and said
        warn("no config entry matches the selection: the matrix is empty ([])")
    notes: list[str] = []
    if github_output:
        notes = _write_github_output({"matrix": matrix.rows})
    if output is not None:
        from inferencex_tools.sweep.service import write_output

        write_output(str(output), text)
    else:
        sys.stdout.write(text)
    if summary:
        from inferencex_tools.sweep.publish import summarize, summary_markdown

        _write_summary(summary_markdown(summarize(matrix.rows, matrix.keys), notes))


def _write_github_output(buckets: dict[str, Any]) -> list[str]:
    from inferencex_tools.cli.common import write_outputs
    from inferencex_tools.sweep.publish import compact, shard_buckets

    sharded = shard_buckets(buckets)
    shard_list = {b: names for b, names in sharded.shards.items() if names != [b]}
    outputs = dict(sharded.outputs)
    if shard_list:
        outputs["shards"] = compact(shard_list)
    write_outputs(outputs, required_by="--github-output")
    for n in sharded.notes:
        print(f"ixtool: note: {n}", file=sys.stderr)
    return sharded.notes


def _write_summary(md: str) -> None:
    from inferencex_tools.cli.common import write_summary

    sys.stderr.write(md)
    write_summary(md)


# ----------------------------------------------------------------------------- full

def full(
    config_files: list[str] | None = CONFIG_FILES,
    runner_config: str | None = RUNNER_CONFIG,
    model_prefix: list[str] | None = typer.Option(
        None, "--model-prefix", metavar="X...",
        help="Keep configs whose KEY starts with one of these."),
    precision: list[str] | None = typer.Option(None, "--precision", metavar="X...",
                                               help="Exact precision."),
    framework: list[str] | None = typer.Option(None, "--framework", metavar="X...",
                                               help="Exact framework."),
    runner_type: list[str] | None = typer.Option(
        None, "--runner-type", metavar="X...", help="Runner labels (must exist in runners.yaml).",
        autocompletion=complete.runner_labels),
    seq_lens: list[str] | None = SEQ_LENS,
    step_size: int = typer.Option(2, "--step-size", help="Range multiplier (> 1)."),
    min_conc: int | None = typer.Option(None, "--min-conc", help="Lower concurrency bound."),
    max_conc: int | None = typer.Option(None, "--max-conc", help="Upper concurrency bound."),
    max_tp: int | None = typer.Option(None, "--max-tp",
                                      help="Drop single-node fixed entries with tp > N."),
    max_ep: int | None = typer.Option(None, "--max-ep",
                                      help="Cap ep of single-node fixed entries at N."),
    single_node: bool = typer.Option(False, "--single-node", help="Single-node configs."),
    multi_node: bool = typer.Option(False, "--multi-node", help="Multinode configs."),
    scenario_type: list[str] | None = SCENARIO,
    runner_node_filter: str | None = NODE_FILTER,
    no_evals: bool = NO_EVALS,
    evals_only: bool = EVALS_ONLY,
    all_evals: bool = ALL_EVALS,
    output: Path | None = OUTPUT,
    github_output: bool = GH_OUTPUT,
    summary: bool = SUMMARY,
) -> None:
    """Full sweep over every config (alias: full-sweep).

    Prints the matrix as one line of JSON, identical to the reference generator (a
    selection that matches nothing prints [] and says so on stderr).

    Exit codes: 0 printed, 2 usage or input error.

    \b
    Examples:
      ixtool sweep full --model-prefix dsr1 --seq-lens 8k1k --single-node
      ixtool sweep full --configs configs/nvidia-master.yaml configs/amd-master.yaml
    """
    from inferencex_tools.sweep.generate import SCENARIOS, SweepRequest
    from inferencex_tools.sweep.service import run_sweep

    req = SweepRequest(
        mode="full", model_prefix=model_prefix, precision=precision, framework=framework,
        runner_type=runner_type, seq_lens=seq_lens, step_size=step_size, min_conc=min_conc,
        max_conc=max_conc, max_tp=max_tp, max_ep=max_ep, single_node=single_node,
        multi_node=multi_node, scenario_types=list(scenario_type or SCENARIOS),
        runner_node_filter=runner_node_filter, no_evals=no_evals, evals_only=evals_only,
        all_evals=all_evals)
    _finish(run_sweep(req, config_files, runner_config), output, github_output, summary)


app.command("full", cls=NargsCommand)(full)
app.command("full-sweep", cls=NargsCommand, hidden=True)(full)


@app.command("test-config", cls=NargsCommand)
def test_config(
    config_keys: list[str] = typer.Option(
        ..., "--config-keys", metavar="KEY...",
        help="Config keys; '*' and '?' are globs (quote them in the shell).",
        autocompletion=complete.config_keys),
    config_files: list[str] | None = CONFIG_FILES,
    runner_config: str | None = RUNNER_CONFIG,
    conc: list[int] | None = typer.Option(
        None, "--conc", metavar="N...", help="Keep only these concurrencies."),
    seq_lens: list[str] | None = SEQ_LENS,
    scenario_type: list[str] | None = SCENARIO,
    runner_node_filter: str | None = NODE_FILTER,
    no_evals: bool = NO_EVALS,
    evals_only: bool = EVALS_ONLY,
    all_evals: bool = ALL_EVALS,
    output: Path | None = OUTPUT,
    github_output: bool = GH_OUTPUT,
    summary: bool = SUMMARY,
) -> None:
    """Rows of selected config keys (ranges always expand with step 2).

    Exit codes: 0 printed, 2 usage or input error (unknown key, glob matching nothing).

    \b
    Example:
      ixtool sweep test-config --config-keys 'dsr1-fp8-*' --conc 64
    """
    from inferencex_tools.sweep.generate import SCENARIOS, SweepRequest
    from inferencex_tools.sweep.service import run_sweep

    req = SweepRequest(
        mode="test", config_keys=list(config_keys), conc=conc, seq_lens=seq_lens,
        scenario_types=list(scenario_type or SCENARIOS), runner_node_filter=runner_node_filter,
        no_evals=no_evals, evals_only=evals_only, all_evals=all_evals)
    _finish(run_sweep(req, config_files, runner_config), output, github_output, summary)


@app.command("from-changelog")
def from_changelog(
    base: str = typer.Option(..., "--base", "--base-ref",
                             help="Base ref; new entries are those since merge-base(BASE, HEAD)."),
    head: str | None = typer.Option(
        None, "--head", "--head-ref",
        help="Head ref (default: the working tree). Changelog AND configs are read from it."),
    changelog: Path = typer.Option(Path("perf-changelog.yaml"), "--changelog",
                                   "--changelog-file", help="The changelog file."),
    trim_conc: bool = typer.Option(False, "--trim-conc",
                                   help="Keep the lowest concurrency per recipe."),
    all_evals: bool = ALL_EVALS,
    evals_only: bool = typer.Option(False, "--evals-only", help="Skip throughput rows."),
    output: Path | None = OUTPUT,
    github_output: bool = typer.Option(
        False, "--github-output",
        help="Write each bucket as compact JSON to $GITHUB_OUTPUT (single_node_8k1k, …, "
        "evals, changelog_metadata); buckets over 256 rows or 1 MB are sharded."),
    summary: bool = SUMMARY,
    priority: str | None = typer.Option(
        None, "--priority", metavar="POLICY",
        help="Annotate every row with priority/queue-token (configs/ci-priority.yaml), as "
        "the reference pipes process_changelog into ci_priority.py; compact JSON out."),
    event_name: str = typer.Option("", "--event-name", help="With --priority: the event."),
    labels_json: str = typer.Option(
        "[]", "--labels-json", help="With --priority: the PR's labels (JSON array)."),
    queue_namespace: str = typer.Option(
        "local", "--queue-namespace", help="With --priority: the queue-token namespace."),
    pr_number: int | None = typer.Option(
        None, "--pr-number", parser=pr_number_or_zero_arg,
        help="With --priority: the PR number (skip-queue-pr)."),
    criteria_json: str = typer.Option(
        "", "--criteria-json", help="With --priority: classifier criteria (JSON array)."),
) -> None:
    """Matrix for the changelog entries added since the merge-base (process_changelog).

    Prints one line of JSON: single_node / multi_node buckets (1k1k, 8k1k, agentic),
    evals, agentic_evals, multinode_evals, multinode_agentic_evals, changelog_metadata.

    Exit codes: 0 printed, 2 usage or input error (git, changelog).

    \b
    Example:
      ixtool sweep from-changelog --base origin/main --summary
    """
    import json

    from inferencex_tools.cli.progress import ProgressLine
    from inferencex_tools.sweep.changelog import FromChangelogOptions, flat_buckets
    from inferencex_tools.sweep.service import run_from_changelog

    with ProgressLine("sweep from-changelog") as progress:
        res = run_from_changelog(base, head, changelog, FromChangelogOptions(
            trim_conc=trim_conc, all_evals=all_evals, evals_only=evals_only),
            progress=progress)
    published = res.matrix
    if priority is not None:
        from inferencex_tools.ci.priority import annotate, dumps
        from inferencex_tools.ci.priority_service import PriorityRequest, context_of, load_policy

        published = annotate(res.matrix, load_policy(priority), context_of(PriorityRequest(
            policy=priority, event_name=event_name, labels_json=labels_json,
            namespace=queue_namespace, pr_number=pr_number, criteria_json=criteria_json)))
        text = dumps(published)
    else:
        # The reference prints its model's JSON dump: compact, UTF-8 (no ASCII escapes).
        text = json.dumps(res.matrix, separators=(",", ":"), ensure_ascii=False) + "\n"
    notes: list[str] = []
    if github_output:
        notes = _write_github_output(flat_buckets(published))
    if output is not None:
        from inferencex_tools.sweep.service import write_output

        write_output(str(output), text)
    else:
        sys.stdout.write(text)
    if summary:
        from inferencex_tools.sweep.publish import summarize, summary_markdown

        rows, keys = _rows_with_keys(res.matrix, res.keys, res.plan)
        _write_summary(summary_markdown(summarize(rows, keys), notes))


def _rows_with_keys(matrix: dict[str, Any], keys: list[str], plan: Any
                    ) -> tuple[list[dict[str, Any]], list[str]]:
    """All rows of a changelog matrix with the config key each came from."""
    from inferencex_tools.sweep.changelog import flat_buckets

    rows: list[dict[str, Any]] = []
    for name, value in flat_buckets(matrix).items():
        if isinstance(value, list) and name != "changelog_metadata":
            rows.extend(value)
    return rows, [plan.key_of(r) for r in rows]


@app.command("explain", cls=NargsCommand)
def explain_cmd(
    key: str = typer.Argument(..., help="The config key to explain.",
                              autocompletion=complete.config_keys),
    config_files: list[str] | None = CONFIG_FILES,
    runner_config: str | None = RUNNER_CONFIG,
) -> None:
    """Show how one config key expands: arms × concurrencies × nodes, for reviewers.

    Exit codes: 0 explained, 2 usage or input error (unknown key).

    \b
    Example:
      ixtool sweep explain dsr1-fp8-h200-sglang
    """
    from inferencex_tools.sweep.explain import explain, render
    from inferencex_tools.sweep.service import load_inputs

    inputs = load_inputs(config_files, runner_config)
    sys.stdout.write(render(explain(inputs.configs, inputs.runners, key)))
