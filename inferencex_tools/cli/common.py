"""Helpers shared by the command modules: output format, emitting results, the GitHub
Actions environment (read here, handed to the services) and its output files."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from inferencex_tools.errors import IxtoolError
from inferencex_tools.report.findings import Finding, Result

if TYPE_CHECKING:
    from inferencex_tools.io.actions import ActionsEnv
    from inferencex_tools.io.settings import Side, TrustedView
    from inferencex_tools.report.adopt import Settings as AdoptSettings
    from inferencex_tools.report.adopt import TrustedBase


# The one wording of the exit codes; commands whose 0/1 mean something more specific
# say so in the same shape ("Exit codes: 0 …, 1 …, 2 usage or input error.").
EXIT_CODES = "Exit codes: 0 clean, 1 findings, 2 usage or input error."


@dataclass
class Settings:
    """The global flags of this process (``--quiet``, ``--traceback``)."""

    quiet: bool = False
    traceback: bool = False

    def reset(self) -> None:
        self.quiet = self.traceback = False


SETTINGS = Settings()


class Format(StrEnum):
    text = "text"
    json = "json"
    github = "github"
    sarif = "sarif"


FORMAT_OPTION = typer.Option(
    Format.text,
    "--format",
    "-f",
    help="Output: text (human), json (stable, see docs/output.md), "
    "github (workflow annotations + job summary), sarif (SARIF 2.1.0).",
    case_sensitive=False,
)


BASELINE_OPTION = typer.Option(
    None, "--baseline", metavar="FILE",
    help="Known findings not to report again (default: the settings' baseline, else "
    ".ixtool-baseline.json at the repository root, when it exists). With "
    "--write-baseline: the file to write.")
WRITE_BASELINE_OPTION = typer.Option(
    False, "--write-baseline",
    help="Record the current findings as known (in --baseline FILE, else the settings' "
    "baseline, else .ixtool-baseline.json at the repository root) and exit 0.")


@dataclass
class Adoption:
    """Per-run adoption options (the repository's settings are always applied).

    ``pr_context``: the change's base, whose settings and baseline apply (never the
    checkout's); with ``detect`` (default) a pull_request(_target) or merge_group event
    of GitHub Actions is one too.  ``view``: the base and PR sides already read."""

    baseline: Path | None = None
    write_baseline: bool = False
    known: Result | None = None  # the same command's result at a base ref
    known_label: str = "at the base"
    pr_context: TrustedBase | None = None
    detect: bool = True
    view: TrustedView | None = None


DEFAULT_BASELINE = ".ixtool-baseline.json"
PR_EVENTS = ("pull_request", "pull_request_target", "merge_group")


def event_context(env: ActionsEnv | None = None, *, event_name: str | None = None,
                  event_path: Path | None = None) -> TrustedBase | None:
    """The PR context of a GitHub event (its base revision), None for other events."""
    from inferencex_tools.io.actions import ActionsEnv as Env
    from inferencex_tools.report.adopt import TrustedBase

    env = env or actions_env()
    name = event_name or env.event_name
    if name not in PR_EVENTS:
        return None
    try:
        payload = Env(event_name=name, event_path=event_path or env.event_path).event()
    except IxtoolError:
        payload = None
    data = payload if isinstance(payload, dict) else {}
    if name == "merge_group":
        group = data.get("merge_group")
        base = group.get("base_sha") if isinstance(group, dict) else None
    else:
        pr = data.get("pull_request")
        side = pr.get("base") if isinstance(pr, dict) else None
        base = side.get("sha") if isinstance(side, dict) else None
    return TrustedBase(base if isinstance(base, str) and base else None)


def adopt(result: Result, opts: Adoption | None = None, cwd: Path | None = None) -> None:
    """The one place adoption controls are applied (every command's findings go through
    it): repository settings, then findings known at a base ref, then the baseline.  In a
    PR context they are the base revision's (docs/security.md), and a change to them is
    a finding (CI601); writing a baseline is always local."""
    opts = opts or Adoption()
    here = cwd or Path.cwd()
    context = opts.pr_context
    if context is None and opts.detect:
        context = event_context()
    if context is None or opts.write_baseline:
        _adopt_local(result, opts, here)
        return
    from inferencex_tools.io.settings import trusted_view

    _adopt_trusted(result, opts, here, opts.view or trusted_view(here, context, opts.baseline))


def _adopt_local(result: Result, opts: Adoption, here: Path) -> None:
    from inferencex_tools.io.layout import repo_root
    from inferencex_tools.io.settings import find_settings, relpath_from
    from inferencex_tools.report import adopt as A

    settings, sdir = find_settings(here)
    root = repo_root(here) or sdir or here
    rel = relpath_from(root, here)
    A.apply_settings(result, settings, rel)
    notes: list[str] = []
    if result.info.get("ignored_by_settings"):
        notes.append(f"{result.info['ignored_by_settings']} ignored by {settings.source}")
    notes += _known_at_base(result, opts, settings, rel)
    path = opts.baseline
    if path is None and settings.baseline and sdir is not None:
        path = sdir / settings.baseline
    if path is None and (opts.write_baseline or (root / DEFAULT_BASELINE).is_file()):
        path = root / DEFAULT_BASELINE
    if path is not None:
        note = _baseline(result, path, opts, rel)
        if note:
            notes.append(note)
    if notes:
        result.info["adoption"] = "; ".join(notes)


def _known_at_base(result: Result, opts: Adoption, settings: AdoptSettings,
                   rel: Callable[[str], str]) -> list[str]:
    """Drop what ``opts.known`` (the base's own findings) already has; the note saying so."""
    from inferencex_tools.report import adopt as A

    if opts.known is None:
        return []
    A.apply_settings(opts.known, settings, rel)
    n = A.drop_known(result, A.fingerprints(opts.known, rel), rel, reason="known_at_base")
    return [f"{n} already present {opts.known_label}"] if n else []


def _adopt_trusted(result: Result, opts: Adoption, here: Path, view: TrustedView) -> None:
    """Settings and baseline of the base side only; CI601/CI602 say what the PR side
    would have changed, or that the base could not be read."""
    from inferencex_tools.io.settings import relpath_from
    from inferencex_tools.report import adopt as A

    rel = relpath_from(view.root, here)
    base = view.base
    settings = base.settings if base is not None else A.Settings()
    at = f"@{view.ref[:12]}" if view.ref else ""
    A.apply_settings(result, settings, rel)
    result.info["settings_from"] = (f"the base revision {view.ref}" if view.ref
                                    else "none (the base revision could not be read)")
    notes: list[str] = []
    if result.info.get("ignored_by_settings"):
        notes.append(f"{result.info['ignored_by_settings']} ignored by {settings.source}{at}")
    notes += _known_at_base(result, opts, settings, rel)
    if base is not None and base.baseline is not None:
        n = A.drop_known(result, A.baseline_known(base.baseline), rel,
                         reason="known_in_baseline")
        if n:
            notes.append(f"{n} known in baseline {base.baseline_file}{at}")
    own = Result(result.command, findings=_trust_findings(view))
    A.apply_settings(own, settings, rel)
    result.extend(own.findings)
    if notes:
        result.info["adoption"] = "; ".join(notes)


def _trust_findings(view: TrustedView) -> list[Finding]:
    """CI602 when the base could not be read (and the checkout has settings), else
    CI601 for each settings or baseline change of the PR side."""
    from inferencex_tools.ci.rules import BASE_SETTINGS_UNREADABLE

    head, base = view.head, view.base
    if base is not None:
        return _changes(view, base)
    files = [f.removesuffix(" [tool.ixtool]")
             for f in (head.settings.source, head.baseline_file) if f]
    if not files and head.error is None:
        return []
    return [BASE_SETTINGS_UNREADABLE.at(
        files[0] if files else ".", None, None,
        f"PR context, but the base revision could not be read ({view.problem}): the "
        f"checkout's {', '.join(files) or 'settings'} were not applied, and no settings or "
        "baseline apply")]


def _changes(view: TrustedView, base: Side) -> list[Finding]:
    from inferencex_tools.ci.rules import SETTINGS_CHANGED
    from inferencex_tools.report import adopt as A

    head = view.head
    old = view.fork or base  # the PR's edits are against its fork point; the base applies
    at = f"the base revision {(view.ref or '')[:12]}"
    out: list[Finding] = []
    changes = ([f"does not load ({head.error})"] if head.error
               else A.settings_delta(old.settings, head.settings))
    if changes:
        src = head.settings.source or old.settings.source or "settings"
        out.append(SETTINGS_CHANGED.at(
            src.removesuffix(" [tool.ixtool]"), 1, 1,
            f"the change edits ixtool's settings ({src}: {'; '.join(changes)}); this check "
            f"applied the settings of {at} ({base.settings.source or 'none'}); the change "
            "takes effect after merge", data={"changes": changes}))
    delta = None if head.error else A.baseline_delta(
        A.baseline_known(old.baseline or {}), A.baseline_known(head.baseline or {}))
    if delta:
        file = head.baseline_file or old.baseline_file or DEFAULT_BASELINE
        out.append(SETTINGS_CHANGED.at(
            file, 1, 1, f"the change edits ixtool's baseline ({file}: {delta}); this check "
            f"applied the baseline of {at}; the change takes effect after merge",
            data={"changes": [delta]}))
    return out


def adopted_copy(result: Result, cwd: Path | None = None, *,
                 opts: Adoption | None = None) -> Result:
    """``result`` as :func:`adopt` would leave it, as a copy (the result itself is left
    as it is and no baseline is written): for decisions taken before the report."""
    from dataclasses import replace

    view = replace(result, findings=list(result.findings), info=dict(result.info))
    o = opts or Adoption()
    adopt(view, replace(o, write_baseline=False, known=None), cwd)
    return view


def adopter(context: TrustedBase | None, cwd: Path | None = None
            ) -> tuple[Callable[[Result], Result], Adoption]:
    """For a command that decides on adopted findings before it reports (``ci gate``):
    the copy function and the :class:`Adoption` of the report, sharing one read of the
    base side.  ``context`` None: a local run (the working tree's settings)."""
    opts = Adoption(pr_context=context, detect=False)
    if context is not None:
        from inferencex_tools.io.settings import trusted_view

        opts.view = trusted_view(cwd or Path.cwd(), context)
    return (lambda r: adopted_copy(r, cwd, opts=opts)), opts


def _baseline(result: Result, path: Path, opts: Adoption, rel: Callable[[str], str]
              ) -> str | None:
    """Write (``--write-baseline``) and/or apply the baseline at ``path``."""
    from inferencex_tools.io.settings import read_baseline, write_baseline
    from inferencex_tools.report import adopt as A

    if opts.write_baseline:
        prev = read_baseline(path) if path.is_file() else None
        write_baseline(path, A.baseline_document([result], rel, prev))
        result.info["baseline_written"] = str(path)
    elif not path.is_file() and opts.baseline is None:
        return None
    n = A.drop_known(result, A.baseline_known(read_baseline(path)), rel,
                     reason="known_in_baseline")
    if opts.write_baseline:
        return f"{n} recorded in baseline {path}"
    return f"{n} known in baseline {path}" if n else None


class _PrNumber:
    """Typer parser of a ``--pr``/``--pr-number`` value: canonical decimal only (no sign,
    spaces, underscores or leading zeros), 1 … 2**31-1 (``inferencex_tools.ci.ids``).

    With ``allow_zero`` a plain ``0`` is taken too: run-sweep.yml passes
    ``${{ github.event.pull_request.number || 0 }}``, i.e. ``0`` on every push.  As in
    the reference ``ci_priority.py`` the number only matters with the skip-queue
    label, which a push never carries, so ``0`` there means "no PR"."""

    __name__ = "pr_number"

    def __init__(self, *, allow_zero: bool = False) -> None:
        self.allow_zero = allow_zero
        self.usage_hint = ("a whole number from 1 to 2147483647, without leading zeros"
                           + (", or 0 for no PR" if allow_zero else ""))

    def __call__(self, value: str | int) -> int:
        from inferencex_tools.ci.ids import pr_number

        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if self.allow_zero and value == "0":
            return 0
        number = pr_number(value) if isinstance(value, str) else None
        if number is None:
            text = str(value)
            shown = text if len(text) <= 40 else f"{text[:40]}… ({len(text):,} characters)"
            raise typer.BadParameter(f"{shown!r} is not a PR number")
        return number


pr_number_arg = _PrNumber()
#: ``--pr-number`` of the commands the workflows call with ``… || 0`` (``ci priority``).
pr_number_or_zero_arg = _PrNumber(allow_zero=True)


def emit(result: Result, fmt: Format, *, strict: bool = False,
         adoption: Adoption | None = None) -> int:
    """Apply the adoption controls, print ``result`` in ``fmt``; write the job summary
    under GitHub Actions.

    Returns the exit code: 0 clean, 1 findings.
    """
    from inferencex_tools.report.reporters import render, render_markdown_summary

    adopt(result, adoption)
    result.strict = strict  # the reports say what the exit code does

    from inferencex_tools.cli.term import color_wanted

    color = fmt is Format.text and color_wanted(sys.stdout)
    sys.stdout.write(render(result, fmt.value, color=color))
    if fmt is Format.github:
        write_summary(render_markdown_summary(result))
    return result.exit_code()


def actions_env() -> ActionsEnv:
    """This process's GitHub Actions environment (read on each call: tests change it)."""
    from inferencex_tools.io.actions import ActionsEnv

    return ActionsEnv.from_environ()


def write_outputs(pairs: Iterable[tuple[str, str]] | Mapping[str, str], *,
                  required_by: str | None = None, env: ActionsEnv | None = None) -> bool:
    """Append ``pairs`` to ``$GITHUB_OUTPUT``; False when it is unset.

    ``required_by`` (an option such as ``--github-output``) makes an unset
    ``$GITHUB_OUTPUT`` a usage error.  A failed write is an input error (exit 2).
    """
    from inferencex_tools.io import actions

    env = env or actions_env()
    path = env.require_output(required_by) if required_by else env.output
    if path is None:
        return False
    actions.write_outputs(path, pairs)
    return True


def write_summary(markdown: str, *, env: ActionsEnv | None = None) -> None:
    """Append ``markdown`` to ``$GITHUB_STEP_SUMMARY`` when set; a failed write is a
    warning on stderr, never an error."""
    from inferencex_tools.io import actions

    env = env or actions_env()
    if env.summary is not None:
        warning = actions.write_summary(env.summary, markdown)
        if warning:
            print(f"ixtool: warning: {warning}", file=sys.stderr)


def warn(message: str) -> None:
    """A warning on stderr (``ixtool: warning: …``); shown under ``--quiet`` too."""
    print(f"ixtool: warning: {message}", file=sys.stderr)


# ``--repo`` is always OWNER/NAME; a directory is ``--root``.  Commands that once took
# the checkout as ``--repo DIR`` keep accepting it (a hidden, deprecated spelling).
DEPRECATED_REPO_DIR = typer.Option(
    None, "--repo", hidden=True, help="Deprecated spelling of --root DIR.")


def repo_dir(root: Path | None) -> Path:
    """``--root`` when given, else the repository the current directory is in (from any
    subdirectory: the nearest directory above holding ``.git``), else the current
    directory — the one root discovery of every command."""
    from inferencex_tools.io.layout import find_root

    return root if root is not None else find_root(Path("."))


def root_of(root: Path | None, deprecated: str | None) -> Path:
    """``--root`` (else the discovered root: :func:`repo_dir`), or the directory given
    with the deprecated ``--repo DIR``."""
    if deprecated is None:
        return repo_dir(root)
    warn(f"--repo {deprecated}: give the directory with --root (--repo is OWNER/NAME)")
    return Path(deprecated)


def repo_and_root(repo: str | None, root: Path | None) -> tuple[str | None, Path]:
    """(OWNER/NAME, directory) where ``--repo`` may still carry a directory (deprecated):
    an existing directory given as ``--repo`` is taken as ``--root``."""
    if repo is not None and Path(repo).is_dir():
        return None, root_of(root, repo)
    return repo, repo_dir(root)


def info(message: str) -> None:
    """An informational line on stderr (never mixed into machine output); silent
    under ``--quiet``."""
    if not SETTINGS.quiet:
        print(message, file=sys.stderr)
