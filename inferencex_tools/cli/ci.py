"""``ixtool ci plan`` and ``ixtool labels explain``: the PR label policy."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from inferencex_tools.cli import complete
from inferencex_tools.cli.common import (
    DEPRECATED_REPO_DIR,
    FORMAT_OPTION,
    Adoption,
    Format,
    actions_env,
    adopt,
    adopter,
    event_context,
    pr_number_arg,
    pr_number_or_zero_arg,
    repo_and_root,
    root_of,
    write_outputs,
    write_summary,
)

app = typer.Typer(
    help="GitHub Actions integration: decide what a workflow event runs.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
labels_app = typer.Typer(
    help="The PR label policy (primary sweep labels, modifiers, policy labels).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("plan")
def plan(
    event: Path | None = typer.Option(
        None, "--event", help="Event payload JSON (default: $GITHUB_EVENT_PATH)."),
    event_name: str | None = typer.Option(
        None, "--event-name",
        help="pull_request, push or merge_group (default: $GITHUB_EVENT_NAME)."),
    root: Path = typer.Option(
        Path("."), "--root", help="The clone to read the head commit and the changelog diff from."),
    repo_dir: str | None = DEPRECATED_REPO_DIR,
    changelog: str = typer.Option(
        "perf-changelog.yaml", "--changelog", help="Changelog path inside the repository."),
    comments: Path | None = typer.Option(
        None, "--comments",
        help="The PR's issue comments (GitHub API JSON list): a maintainer's "
        "/reuse-sweep-run authorizes reuse and skips the PR sweep."),
    no_git: bool = typer.Option(
        False, "--no-git", help="Do not inspect the clone (no [skip-sweep]/diff check)."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Decide what runs for a GitHub event: changelog gate, policy check, sweep.

    \b
    Writes key=value outputs to $GITHUB_OUTPUT and a decision table to
    $GITHUB_STEP_SUMMARY when those are set (see docs/ci.md for every key).

    Exit codes: 0 decided, 1 label errors (e.g. two primary labels), 2 usage or input error.

    \b
    Example:
      ixtool ci plan --event event.json --event-name pull_request --root .
    """
    from inferencex_tools.ci.outputs import explain_text, output_pairs, summary_markdown
    from inferencex_tools.ci.service import PlanRequest
    from inferencex_tools.ci.service import plan as run_plan
    from inferencex_tools.report.reporters import render

    env = actions_env()
    decision, result = run_plan(PlanRequest(
        event_path=event, event_name=event_name, repo=root_of(root, repo_dir), changelog=changelog,
        comments=comments, use_git=not no_git, actions=env))
    write_outputs(output_pairs(decision), env=env)
    write_summary(summary_markdown(decision), env=env)
    if fmt is Format.text:
        sys.stdout.write(explain_text(decision))
    context = event_context(env, event_name=event_name, event_path=event)
    adopt(result, Adoption(pr_context=context, detect=False), root_of(root, repo_dir))
    sys.stdout.write(render(result, fmt.value))
    raise typer.Exit(result.exit_code())


@labels_app.command("explain")
def explain(
    labels: list[str] | None = typer.Argument(None, help="The PR's labels.",
                                              autocompletion=complete.pr_labels),
    event: str = typer.Option("pull_request", "--event", help="pull_request, push, merge_group."),
    action: str = typer.Option("synchronize", "--action", help="pull_request action."),
    draft: bool = typer.Option(False, "--draft", help="The PR is a draft."),
    fork: bool = typer.Option(False, "--fork", help="The PR comes from a fork."),
    skip_sweep: bool = typer.Option(
        False, "--skip-sweep", help="The head commit message contains [skip-sweep]."),
    prepared: bool = typer.Option(
        False, "--prepared", help="The head is a merge-with-reuse preparation commit pushed "
        "on the previous head (only then does [skip-sweep] skip the sweep)."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Explain what a label set does (default: a synchronize event of a same-repo PR).

    Without labels, also lists the 13 relevant labels. Exit 1 when the labels conflict.

    Exit codes: 0 explained, 1 the labels conflict, 2 usage error (not a sweep or policy label).

    \b
    Examples:
      ixtool labels explain
      ixtool labels explain full-sweep-enabled evals-only
    """
    from inferencex_tools.ci.outputs import explain_text
    from inferencex_tools.ci.service import explain as run_explain
    from inferencex_tools.report.reporters import render

    decision, result = run_explain(list(labels or []), event=event, action=action,
                                   draft=draft, fork=fork, skip_sweep=skip_sweep,
                                   prepared=prepared)
    adopt(result)
    if fmt is Format.text:
        sys.stdout.write(explain_text(decision, with_catalog=not labels))
        if result.findings:
            sys.stdout.write(render(result, "text"))
    else:
        sys.stdout.write(render(result, fmt.value))
    raise typer.Exit(result.exit_code())


@app.command("shards")
def shards(
    matrix: Path = typer.Option(..., "--matrix", help="Sweep matrix JSON (ixtool sweep output)."),
    max_shards: int = typer.Option(
        4, "--max-shards", min=1, max=64, help="Shard jobs the workflow has (outputs shard-1…N)."),
    canary: bool = typer.Option(
        False, "--canary", help="Take the canary row (lowest-concurrency non-eval single-node "
        "1k1k/8k1k row) out of the shards into output 'canary'."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Split a sweep matrix into job-matrix shards of at most 256 small row handles.

    \b
    Writes shard-count, jobs, canary and shard-1 … shard-N (JSON lists of {id, runner,
    name}; [] when empty) to $GITHUB_OUTPUT, or prints them. Exit 1 when the rows do
    not fit.

    Exit codes: 0 written, 1 the rows do not fit, 2 usage or input error.

    \b
    Example:
      ixtool ci shards --matrix sweep-matrix.json --max-shards 4 --canary
    """
    import json

    from inferencex_tools.ci.service import run_shards
    from inferencex_tools.report.reporters import render

    pairs, result = run_shards(matrix, max_shards, canary=canary)
    adopt(result)
    out = write_outputs(pairs)
    if fmt is Format.text and not out:
        sys.stdout.write("".join(f"{k}={v}\n" for k, v in pairs))
    elif fmt is Format.json:
        result.info["outputs"] = {k: json.loads(v) for k, v in pairs}
    if fmt is not Format.text or result.findings:
        sys.stdout.write(render(result, fmt.value))
    raise typer.Exit(result.exit_code())


@app.command("row")
def row(
    matrix: Path = typer.Option(..., "--matrix", help="Sweep matrix JSON (ixtool sweep output)."),
    row_id: str = typer.Option(..., "--id", help="Row handle id from a shard: <bucket>/<index>."),
    node: str | None = typer.Option(
        None, "--node", help="Concrete runner name ($RUNNER_NAME): print the launcher "
        "environment as shell exports instead of the row JSON."),
    workspace: str = typer.Option(".", "--workspace", help="GITHUB_WORKSPACE for --node."),
) -> None:
    """Print one row of a sweep matrix (JSON), or with --node its launcher environment
    as `export KEY='value'` lines (shell-quoted) plus LAUNCHER=runners/launch_<family>.sh.

    Exit codes: 0 printed, 2 usage or input error.

    \b
    Example:
      ixtool ci row --matrix sweep-matrix.json --id single_node_8k1k/0 --node h200-dgxc-slurm_7
    """
    from inferencex_tools.ci.service import run_row

    sys.stdout.write(run_row(matrix, row_id, node=node, workspace=workspace))


@app.command("priority")
def priority(
    policy: str = typer.Option(
        "configs/ci-priority.yaml", "--policy", help="The priority policy (ci-priority.yaml)."),
    event_name: str = typer.Option(
        "", "--event-name", help="The workflow's event (push gets the event adjustment)."),
    labels_json: str = typer.Option(
        "[]", "--labels-json", help="The PR's labels as a JSON array of strings."),
    queue_namespace: str = typer.Option(
        "local", "--queue-namespace",
        help="Namespace of the queue tokens, e.g. <run_id>:<run_attempt>[:<family>]."),
    pr_number: int | None = typer.Option(
        None, "--pr-number", parser=pr_number_or_zero_arg,
        help="PR number for skip-queue-pr (with the skip_queue label)."),
    criteria_json: str = typer.Option(
        "", "--criteria-json",
        help="Classifier criteria (JSON array): only the facts named count."),
    input_path: Path | None = typer.Option(
        None, "--input", help="Read the matrix JSON from this file instead of stdin."),
) -> None:
    """Add priority, queue-token and skip-queue-pr to every job of a matrix.

    \b
    Accepts the reference's ci_priority.py argv verbatim and prints byte-identical
    JSON: every dict with `runner` and `framework`, at any
    depth, is scored from configs/ci-priority.yaml.

    Exit codes: 0 printed, 2 usage or input error.

    \b
    Example:
      ixtool ci priority --input sweep-matrix.json --event-name push
      ixtool sweep full --model-prefix dsr1 | ixtool ci priority
    """
    from inferencex_tools.ci.priority_service import PriorityRequest, read_stream, run_priority
    from inferencex_tools.io.files import read_bytes

    if input_path is not None:
        raw, source = read_bytes(input_path), str(input_path)
    else:
        raw, source = read_stream(sys.stdin.buffer), "<stdin>"
    sys.stdout.write(run_priority(PriorityRequest(
        policy=policy, event_name=event_name, labels_json=labels_json,
        namespace=queue_namespace, pr_number=pr_number, criteria_json=criteria_json),
        raw, source))


@app.command("gate")
def gate(
    event: Path | None = typer.Option(
        None, "--event", help="Event payload JSON (default: $GITHUB_EVENT_PATH without --base)."),
    event_name: str | None = typer.Option(
        None, "--event-name",
        help="pull_request, push or merge_group (default: $GITHUB_EVENT_NAME)."),
    base: str | None = typer.Option(
        None, "--base", help="Without an event: the base ref (a local PR-style gate)."),
    head: str | None = typer.Option(None, "--head", help="With --base: the head ref (HEAD)."),
    pr: int | None = typer.Option(None, "--pr", parser=pr_number_arg,
                                  help="With --base: the PR number."),
    label: list[str] | None = typer.Option(
        None, "--label", help="With --base: a PR label (repeatable) for the plan.",
        autocompletion=complete.pr_labels),
    root: Path = typer.Option(Path("."), "--root", help="The clone (full history)."),
    changelog: str = typer.Option(
        "perf-changelog.yaml", "--changelog", help="Changelog path inside the repository."),
    comments: Path | None = typer.Option(
        None, "--comments", help="The PR's issue comments (GitHub API JSON) for reuse."),
    repo: str | None = typer.Option(
        None, "--repo", help="OWNER/NAME for PR links (default: $GITHUB_REPOSITORY); a "
        "directory here is the deprecated spelling of --root."),
    repo_slug: str | None = typer.Option(None, "--repo-slug", hidden=True,
                                         help="Deprecated spelling of --repo."),
    priority: str = typer.Option(
        "auto", "--priority",
        help="Queue priority of the rows: auto (configs/ci-priority.yaml at the base), "
        "none, or a policy file."),
    queue_namespace: str | None = typer.Option(
        None, "--queue-namespace",
        help="Queue-token namespace (default: $GITHUB_RUN_ID:$GITHUB_RUN_ATTEMPT, else local)."),
    criteria_json: str = typer.Option(
        "", "--criteria-json", help="Classifier criteria for the priority (JSON array)."),
    matrix_out: Path | None = typer.Option(
        None, "--matrix-out", help="Write the sweep matrix here (upload it as an artifact)."),
    max_shards: int = typer.Option(
        4, "--max-shards", min=1, max=64, help="Shard jobs of the workflow (shard-1…N)."),
    allow_runner: list[str] | None = typer.Option(
        None, "--allow-runner",
        help="Extra trusted runner label (repeatable); default: labels of runners.yaml at "
        "the base.", autocompletion=complete.runner_labels),
    no_policy: bool = typer.Option(
        False, "--no-policy", help="Skip the policy stage (it runs recipes; privileged "
        "planning jobs must not)."),
    trace_cache: Path | None = typer.Option(
        None, "--trace-cache", envvar="IXTOOL_TRACE_CACHE", metavar="DIR",
        help="Policy stage: reuse the result of a trace that read the same repository "
        "bytes from DIR (filled by `ixtool policy check --trace-cache DIR` on the base "
        "branch). Only read: the gate keeps nothing of a head it does not trust."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """The whole PR gate in one process: plan → changelog → configs → policy → matrix.

    \b
    Each YAML file is parsed once; findings of every stage are one result; the
    decisions and the matrix shards (row handles) go to $GITHUB_OUTPUT, a summary to
    $GITHUB_STEP_SUMMARY (see docs/ci.md).

    Exit codes: 0 pass, 1 findings, 2 usage or input error.

    \b
    Example:
      ixtool ci gate --base origin/main --pr 1234 --label sweep-enabled --no-policy
    """
    from inferencex_tools.ci.gate import GateRequest, default_policy_stage
    from inferencex_tools.ci.gate import gate as run_gate
    from inferencex_tools.ci.outputs import explain_text, summary_markdown
    from inferencex_tools.cli.progress import ProgressLine
    from inferencex_tools.report.adopt import TrustedBase
    from inferencex_tools.report.reporters import render

    env = actions_env()
    slug, root = repo_and_root(repo, root)
    if event is None and base is None:
        event = env.event_path
    # the settings and baseline that judge a change: its base's (docs/security.md)
    context = (TrustedBase(base, head) if base is not None else
               event_context(env, event_name=event_name, event_path=event))
    adopted, adoption = adopter(context, root)
    run_id = os.environ.get("GITHUB_RUN_ID")  # the queue namespace of the reference
    namespace = queue_namespace or (
        f"{run_id}:{os.environ.get('GITHUB_RUN_ATTEMPT', '1')}" if run_id else "local")
    with ProgressLine("ci gate") as progress:
        outcome = run_gate(GateRequest(
            event_path=event, event_name=event_name or env.event_name, base=base,
            head=head, pr=pr, labels=tuple(label or ()), repo=root, changelog=changelog,
            comments=comments, repo_slug=slug or repo_slug or env.repository,
            priority=priority, namespace=namespace, criteria_json=criteria_json,
            matrix_out=matrix_out, max_shards=max_shards,
            runner_allow=tuple(allow_runner or ()), adopted=adopted,
            progress=progress if progress.enabled else None, trace_cache=trace_cache),
            policy_stage=None if no_policy else default_policy_stage)
    write_outputs(outcome.outputs, env=env)
    write_summary(summary_markdown(outcome.decision,
                                   errors=int(dict(outcome.outputs)["errors"])), env=env)
    if fmt is Format.text:
        sys.stdout.write(explain_text(outcome.decision))
        stages = outcome.result.info["stages"]
        why = outcome.result.info.get("skipped", {})
        sys.stdout.write("stages: " + ", ".join(
            f"{k} {v}" + (f" ({why[k]})" if k in why else "") for k, v in stages.items()) + "\n")
    adopt(outcome.result, adoption, root)
    sys.stdout.write(render(outcome.result, fmt.value))
    raise typer.Exit(outcome.result.exit_code())
