"""``ixtool al …``: the measured acceptance length of a finished sweep (docs/al-audit.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from inferencex_tools.cli.common import FORMAT_OPTION, Format, emit, info, write_summary

if TYPE_CHECKING:
    from inferencex_tools.al.service import Audit, AuditRequest
    from inferencex_tools.io.artifacts import Limits

app = typer.Typer(
    help="Audit the acceptance length a finished sweep really served.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

MiB = 1 << 20


@app.command("audit")
def audit_cmd(
    run_id: str | None = typer.Argument(
        None, metavar="[RUN_ID]",
        help="The workflow run whose artifacts to audit (downloaded through the GitHub API)."),
    artifacts: Path | None = typer.Option(
        None, "--artifacts", metavar="DIR",
        help="Offline: the directory `gh run download RUN_ID -D DIR` wrote (one "
        "subdirectory per artifact)."),
    root: Path = typer.Option(
        Path("."), "--root",
        help="The repository at the run's head commit (rows, launches, curves)."),
    repo: str | None = typer.Option(
        None, "--repo", help="OWNER/NAME on GitHub (RUN_ID mode; default: the origin remote)."),
    api_url: str | None = typer.Option(
        None, "--api-url", help="GitHub API root (default: $GITHUB_API_URL or "
        "https://api.github.com)."),
    sigmas: float = typer.Option(
        4.0, "--sigmas", min=0.0, max=100.0,
        help="Standard errors of the measurement allowed either way (default 4)."),
    slack: float = typer.Option(
        0.01, "--slack", min=0.0, max=1.0,
        help="Forced AL: what the engine may round the scheduled AL by (default 0.01)."),
    band: float = typer.Option(
        0.03, "--band", min=0.0, max=5.0,
        help="Golden AL: what a real run may differ by beyond its noise (default 0.03; "
        "widen for workloads unlike SPEED-Bench coding)."),
    far: float = typer.Option(
        0.20, "--far", min=0.0, max=5.0,
        help="Golden AL: this far beyond the band is a warning (default 0.20)."),
    base: str | None = typer.Option(
        None, "--base", metavar="REF",
        help="Judge against the golden curves and registry of this ref, as `review` and "
        "the gate judge a pull request (default: the default branch, origin/main or "
        "main; the checkout's own without git)."),
    registry: Path | None = typer.Option(
        None, "--registry", help="Golden-AL registry (default: the --base ref's "
        "golden_al_distribution/registry.yaml, or the one derived from its curves)."),
    curves_dir: Path | None = typer.Option(
        None, "--curves-dir", help="Directory of the curve files (default: the registry's)."),
    markdown: Path | None = typer.Option(
        None, "--markdown", metavar="FILE",
        help="Also write the Markdown section (table per K and a Mermaid chart) that "
        "`ixtool review --al-audit FILE` posts on the PR."),
    max_file: int = typer.Option(
        1024, "--max-file-mib", min=1, max=1 << 20,
        help="MiB read at most from one file of an artifact (a server log)."),
    max_artifact: int = typer.Option(
        4096, "--max-artifact-mib", min=1, max=1 << 22,
        help="MiB read (and downloaded) at most per artifact."),
    timeout: float = typer.Option(60.0, "--timeout", min=1.0, help="Seconds per trace."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0, max=64,
                             help="Parallel traces (default: three per CPU)."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too."),
    allow_unsandboxed: bool = typer.Option(
        False, "--allow-unsandboxed",
        help="Trace the launches even when no sandbox is available (as `ixtool policy "
        "check --allow-unsandboxed`)."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Did the sweep's launches serve the acceptance length they asked for?

    Each job of the run is matched to its row of the sweep at --root (by the
    artifact names the benchmark template gives it) and measured from its aiperf
    server_metrics_export.json (vLLM/TensorRT-LLM spec-decode counters) or its server
    log (vLLM "SpecDecoding metrics" lines, SGLang "accept len" lines).  A throughput
    job that forces an AL must serve it (AL201, error); a real-verification job (an
    eval, or no synthetic knob) is compared with the golden curve point of its draft,
    thinking mode and K (AL202 warning / AL203 note); what cannot be measured says why
    (AL301).  Artifacts are read with size and entry limits and never extracted; with
    RUN_ID only the job artifacts are downloaded (GITHUB_TOKEN or GH_TOKEN), the
    archives from their signed URL without the token.

    Exit codes: 0 clean, 1 findings (errors; warnings too with --strict), 2 usage or
    input error.

    \b
    Examples:
      ixtool al audit --artifacts run      (after: gh run download RUN_ID -D run)
      ixtool al audit 29784780049 --markdown al.md
    """
    from inferencex_tools.al.judge import Bands
    from inferencex_tools.al.render import markdown as render_md
    from inferencex_tools.al.render import text_table
    from inferencex_tools.al.service import AuditRequest, RunInfo, audit
    from inferencex_tools.errors import UsageError
    from inferencex_tools.io.artifacts import Limits, run_directory

    if (run_id is None) == (artifacts is None):
        raise UsageError("give exactly one of RUN_ID or --artifacts DIR",
                         hint="e.g. ixtool al audit --artifacts run (after `gh run download "
                         "RUN_ID -D run`)")
    limits = Limits(max_file=max_file * MiB, max_artifact=max_artifact * MiB,
                    max_download=max_artifact * MiB)
    bands = Bands(sigmas=sigmas, slack=slack, band=band, far=far)
    req = AuditRequest(root=root, artifacts=[], bands=bands, registry=registry, base=base,
                       curves_dir=curves_dir, timeout=timeout,
                       jobs=jobs or 3 * (os.cpu_count() or 1), root_sha=_head(root),
                       allow_unsandboxed=allow_unsandboxed,
                       isolate=False if os.environ.get("IXTOOL_TRACE_NO_NAMESPACES") == "1"
                       else None)
    if artifacts is not None:
        req.artifacts = run_directory(artifacts, limits)
        req.run = RunInfo(directory=str(artifacts))
        result = audit(req)
    else:
        result = _api_audit(run_id or "", repo, root, api_url, limits, req)
    md = render_md(result)
    if markdown is not None:
        from inferencex_tools.io.files import atomic_write

        atomic_write(markdown, md.encode())
        info(f"wrote {markdown}")
    if fmt is Format.text:
        typer.echo(text_table(result), nl=False)
    if fmt is Format.github:
        write_summary(md)
    result.result.info["markdown"] = md
    raise typer.Exit(emit(result.result, fmt, strict=strict))


def _head(root: Path) -> str | None:
    from inferencex_tools.errors import IxtoolError
    from inferencex_tools.io.git import GitRepo

    try:
        return GitRepo.open(root).resolve("HEAD")
    except IxtoolError:
        return None


def _api_audit(run_id: str, repo: str | None, root: Path, api_url: str | None,
               limits: Limits, req: AuditRequest) -> Audit:
    from inferencex_tools.al.service import audit_run
    from inferencex_tools.io.github import Forge, api_url_from_env, token_from_env

    rid, slug = run_of(run_id, repo, root)
    forge = Forge(slug, token=token_from_env(), api_url=api_url_from_env(api_url))
    info(f"auditing run {rid} of {slug}: listing and downloading its job artifacts")
    return audit_run(req, forge, rid, limits)


def run_of(run_id: str, repo: str | None, root: Path, why: str = "") -> tuple[int, str]:
    """The workflow run a command names: its id and OWNER/NAME (``--repo``, else the GitHub
    origin remote of ``root``); a usage error saying what to pass otherwise (``why``: what
    the repository is needed for, added to the hint)."""
    from inferencex_tools.ci.ids import run_id as parse_run_id
    from inferencex_tools.errors import UsageError

    rid = parse_run_id(run_id)
    if rid is None:
        raise UsageError(f"invalid RUN_ID {run_id[:40]!r}",
                         hint="copy the number from the run's URL (…/actions/runs/ID)")
    slug = repo or origin_slug(root)
    if slug is None:
        raise UsageError("no --repo and no GitHub origin remote at --root",
                         hint="pass --repo OWNER/NAME" + (f" ({why})" if why else ""))
    return rid, slug


def origin_slug(root: Path) -> str | None:
    """OWNER/NAME of the GitHub origin remote of ``root`` (None: none)."""
    from inferencex_tools.errors import IxtoolError
    from inferencex_tools.io.git import GitRepo

    try:
        return GitRepo.open(root).remote_slug()
    except IxtoolError:
        return None
