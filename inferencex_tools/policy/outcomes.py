"""From traced jobs to verdicts: one :class:`~.check.RowOutcome` per row and family.

* a script stage that ran → the policy on its server launches (:func:`.check.evaluate`);
* a multi-node submission (``srtctl apply -f RECIPE``) → the submitted recipe read as
  its consumer reads it (:mod:`.static`), then the same policy;
* anything else → a finding that says why the row has no verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from inferencex_tools.policy.check import RowOutcome, Verdict, evaluate, locate
from inferencex_tools.policy.pipeline import JobTrace
from inferencex_tools.policy.resolve import recipe_path
from inferencex_tools.policy.rules import (
    LAUNCHER_UNTRACED,
    NO_RECIPE,
    NO_SCRIPT,
    NO_SERVER,
    NOT_CHECKED,
    RECIPE_DUPLICATE,
    RECIPE_LIMIT,
    SANDBOX_STOPPED,
    STATIC_ONLY,
    TRACE_FAILED,
)
from inferencex_tools.policy.static import extract
from inferencex_tools.policy.store import CurveStore
from inferencex_tools.sandbox import Record, TraceResult

Reader = Callable[[str], str | None]


@dataclass
class Outcomes:
    rows: list[RowOutcome] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # file → text (for reports)


def _text(read: Reader, path: str, sources: dict[str, str]) -> str:
    if path not in sources:
        sources[path] = read(path) or ""
    return sources[path]


def outcome(jt: JobTrace, store: CurveStore, read: Reader, sources: dict[str, str]) -> RowOutcome:
    row = jt.job.row
    if jt.stopped is not None:
        return _stopped(jt, jt.stopped)
    if jt.trace is not None and jt.script is not None:
        text = _text(read, jt.script, sources)
        o = evaluate(row, jt.script, text, jt.trace, store)
        o.family = jt.job.family
        return o
    if jt.submission is not None:
        return submitted(jt, jt.submission, store, read, sources)
    return _no_trace(jt, read, sources)


def _stopped(jt: JobTrace, tr: TraceResult) -> RowOutcome:
    """The sandbox stopped the launcher's (or the static submission's) trace: no verdict,
    and an error that says why (never a fallback that could pass)."""
    from inferencex_tools.policy.check import stopped_message

    launcher = jt.job.launcher or f"runners/launch_{jt.job.family}.sh"
    o = RowOutcome(jt.job.row, launcher, [], [], tr, family=jt.job.family)
    msg, data = stopped_message(tr)
    o.verdicts.append(Verdict(SANDBOX_STOPPED, launcher, None, f"launcher {launcher}: {msg}",
                              data=data))
    o.unchecked = msg
    return o


def _launcher_failure(jt: JobTrace) -> str:
    tr = jt.launcher
    if tr is None:
        return jt.why or "not traced"
    from inferencex_tools.policy.check import failure_message

    if not tr.ok:
        return f"launcher {jt.job.launcher}: " + failure_message(tr)[0]
    return f"launcher {jt.job.launcher}: {jt.why or 'no job step'}"


def _no_trace(jt: JobTrace, read: Reader, sources: dict[str, str]) -> RowOutcome:
    row = jt.job.row
    launcher = jt.job.launcher or f"runners/launch_{jt.job.family}.sh"
    o = RowOutcome(row, launcher, [], [], jt.launcher, family=jt.job.family)
    text = _text(read, launcher, sources)
    if jt.step is not None and jt.script is None:  # the step runs a script that is not here
        line = locate(text, (jt.step.script or "").rsplit("/", 1)[-1].split("$")[0] or None)
        o.verdicts.append(Verdict(NO_SCRIPT, launcher, line, jt.why or "no script",
                                  data=(("step", " ".join(jt.step.command)),)))
        return o
    if jt.missing_recipe is not None:
        vendored = recipe_path(jt.missing_recipe)[0]
        ext = external_source(jt, read, sources)
        if ext is not None:
            o.unchecked = _external_reason(launcher, jt.missing_recipe, ext)
            return o
        o.verdicts.append(Verdict(
            NO_RECIPE, row.config_file, row.key_line,
            f"{launcher} submits {jt.missing_recipe}, which is not vendored in this "
            f"repository ({vendored} does not exist) and the launcher clones no "
            "repository it could come from"))
        return o
    if jt.missing is not None:
        o.verdicts.append(Verdict(
            NO_SCRIPT, row.config_file, row.key_line,
            f"{row.key} [{row.entry_label()}] on {jt.job.family}: {jt.missing}; "
            f"{_launcher_failure(jt)}"))
        return o
    if jt.launcher is not None and not jt.launcher.ok:
        from inferencex_tools.policy.check import failure_message
        from inferencex_tools.policy.unreproducible import missing_stub_output

        why = missing_stub_output(jt.launcher)
        if why is not None:
            o.unchecked = f"launcher {launcher}: {why}"
            o.verdicts.append(Verdict(NOT_CHECKED, launcher, None,
                                      f"{row.key}: not checked: {o.unchecked}"))
            return o
        msg, data = failure_message(jt.launcher)
        o.verdicts.append(Verdict(TRACE_FAILED, launcher, None,
                                  f"launcher {launcher}: {msg}", data=data))
        return o
    o.verdicts.append(Verdict(NO_SERVER, launcher, None,
                              f"{launcher}: {jt.why or 'no benchmark step started'}"))
    return o


def _external_reason(launcher: str, recipe: str, source: str) -> str:
    """Why a row is not checked (one text per launcher and source: rows share it)."""
    del recipe  # the rows carry it; the reason is shared by every recipe of the source
    return (f"{launcher} submits recipes that are not in this repository: it reads them "
            f"at run time from its checkout of {source}, which ixtool does not fetch")


def _traced_clone(records: list[Record]) -> str | None:
    """``URL at REF`` of the last ``git clone`` the launcher trace recorded (the ref of a
    later ``git checkout``, when there is one)."""
    url: str | None = None
    ref: str | None = None
    for r in records:
        args = list(r.argv[1:]) if r.tool == "git" else []
        if args[:1] == ["clone"]:
            words = [a for i, a in enumerate(args[1:], 1)
                     if not a.startswith("-") and args[i - 1] not in _GIT_VALUE_OPTIONS]
            if words:
                url, ref = words[0], None
                for i, a in enumerate(args):
                    if a in ("--branch", "-b") and i + 1 < len(args):
                        ref = args[i + 1]
        elif args[:1] == ["checkout"] and url is not None:
            refs = [a for a in args[1:] if not a.startswith("-")]
            if refs:
                ref = refs[0]
    if url is None:
        return None
    return f"{url} at {ref}" if ref else f"{url} (default branch)"


_GIT_VALUE_OPTIONS = ("--branch", "-b", "--depth", "--origin", "-o", "--reference",
                      "--config", "-c")


def external_source(jt: JobTrace, read: Reader, sources: dict[str, str]) -> str | None:
    """Where a recipe that is not in the repository comes from at run time: the checkout
    the traced launcher made, else the clones its text makes for this row (the sweep
    area's reading of launchers, :mod:`inferencex_tools.sweep.recipes`)."""
    if jt.launcher is not None:
        found = _traced_clone(jt.launcher.records)
        if found is not None:
            return found
    launcher = jt.job.launcher
    if not launcher:
        return None
    from inferencex_tools.sweep.recipes import applicable, learn

    cfg = jt.job.row.config
    known = {var: str(cfg[k]) for var, k in (("MODEL_PREFIX", "model-prefix"),
                                             ("FRAMEWORK", "framework"),
                                             ("PRECISION", "precision")) if k in cfg}
    known.update({k: v for k, v in jt.job.env.items() if k in ("IS_MULTINODE", "FRAMEWORK")})
    clones = applicable(learn({launcher: _text(read, launcher, sources)})
                        .launcher_clones([launcher]), known)
    return "; ".join(c.describe() for c in clones) or None


def _config_file(rec: Record) -> str | None:
    args = list(rec.argv)
    for i, a in enumerate(args):
        if a in ("-f", "--file", "--config") and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(("-f=", "--file=")):
            return a.split("=", 1)[1]
    return None


def _sbatch_submission(jt: JobTrace, rec: Record) -> RowOutcome:
    script = next((a for a in rec.argv[1:] if a.endswith((".slurm", ".sh", ".sbatch"))),
                  rec.argv[-1] if rec.argv else "?")
    o = RowOutcome(jt.job.row, jt.job.launcher, [], [], jt.launcher, family=jt.job.family)
    o.unchecked = (f"{jt.job.launcher} submits {script} with sbatch; its servers start "
                   "inside that job (srun → container → server script), which is not "
                   "traced and has no recipe to read")
    return o


def _recipe_not_here(jt: JobTrace, spec: str, shown: str, read: Reader,
                     sources: dict[str, str]) -> RowOutcome:
    """The submitted recipe is not in the repository: from an external checkout (not
    checked, with its source) or nowhere (PO204)."""
    row = jt.job.row
    o = RowOutcome(row, shown, [], [], jt.launcher, family=jt.job.family)
    ext = external_source(jt, read, sources)
    if ext is not None:
        o.unchecked = _external_reason(jt.job.launcher or "?", spec or "?", ext)
        return o
    o.verdicts.append(Verdict(NO_RECIPE, row.config_file, row.key_line,
                              f"{jt.job.launcher} submits {spec or '?'}, which is not "
                              "vendored in this repository, and the launcher clones no "
                              "repository it could come from"))
    return o


def submitted(jt: JobTrace, rec: Record, store: CurveStore, read: Reader,
              sources: dict[str, str]) -> RowOutcome:
    """A multi-node row: the recipe as the launcher submitted it."""
    row = jt.job.row
    if rec.tool != "srtctl":
        return _sbatch_submission(jt, rec)
    spec = _config_file(rec) or ""
    path, _, selector = spec.partition(":")
    vendored, _ = recipe_path(spec) if spec else ("", None)
    text = rec.files.get(path)
    if text is None:
        return _recipe_not_here(jt, spec, vendored or path, read, sources)
    shown = vendored if vendored and read(vendored) is not None else path
    launch = extract(text, shown, selector=selector or None)
    o = RowOutcome(row, shown, [], [], jt.launcher, family=jt.job.family)
    o.notes.append(f"{jt.job.launcher} → srtctl apply -f {spec}")
    sources.setdefault(shown, read(shown) or text)
    for key, line, col in launch.doc.duplicates:
        o.verdicts.append(Verdict(RECIPE_DUPLICATE, shown, line,
                                  f"{shown}:{line}:{col}: key '{key}' appears again in the "
                                  "same mapping; srtctl keeps this last value and ignores the "
                                  "earlier one"))
    if launch.record is None:
        rule = RECIPE_LIMIT if (launch.doc.limit or launch.doc.error) else NO_SERVER
        o.verdicts.append(Verdict(rule, shown, launch.doc.error_line,
                                  launch.error or "no worker found"))
        return o
    tr = TraceResult(script=shown, env={}, root="", isolation="static", returncode=0,
                     timed_out=False, seconds=0.0, records=[launch.record])
    ev = evaluate(row, shown, text, tr, store)
    ev.verdicts[:0] = o.verdicts
    ev.family, ev.notes, ev.trace = jt.job.family, o.notes + launch.notes, jt.launcher
    ev.static = True
    return ev


def fallback_note(jt: JobTrace) -> Verdict:
    how = ("its submission was done statically: the recipe it names, with the real "
           "synthetic-acceptance injector when its text calls it" if jt.job.row.multinode
           else "the benchmark script was resolved by the launcher naming rule")
    return Verdict(LAUNCHER_UNTRACED, jt.job.launcher or "?", None,
                   f"{_launcher_failure(jt)}; {how}")


def static_note(launcher: str, recipe: str, notes: list[str]) -> Verdict:
    return Verdict(STATIC_ONLY, recipe, None, f"{launcher}: {'; '.join(notes) or recipe}")


def not_checked(key: str, file: str, line: int | None, reasons: Mapping[str, None]) -> Verdict:
    return Verdict(NOT_CHECKED, file, line,
                   f"{key}: not checked: " + "; ".join(reasons) if reasons
                   else f"{key}: not checked: no row of this key was traced")


def read_from(root: Path) -> Reader:
    def read(path: str) -> str | None:
        p = root / path
        try:
            if p.is_file() and not p.is_symlink():
                return p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        return None
    return read
