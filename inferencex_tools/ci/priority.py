"""Queue priority of matrix rows, pure (spec SWEEP.md §1.9, the reference's ``ci_priority.py``).

The self-hosted queue orders benchmark jobs by a score read from
``configs/ci-priority.yaml``.  Every dict of a matrix payload (at any depth) that has
both ``runner`` and ``framework`` is a job and gets three annotations:

* ``priority`` — the score as a string with three decimals (``"4.500"``):
  ``base-score`` + the event's adjustment + multi-node (a non-null ``prefill``) +
  agentic (``scenario-type: agentic-coding``) + eval-only (``eval-only: true``) +
  precision + spec-decoding + the *first* framework prefix that matches (equal, or
  ``prefix-…``) + the exact model-prefix + the checklist label; a patchwork label (or
  criterion) that is not waived forces the patchwork score.  A classifier's criteria
  list, when given, masks which facts count.  Decimal arithmetic, rounded half-up.
* ``queue-token`` — the first 32 hex digits of sha256 over
  ``<namespace>:<path>:<canonical JSON of the original job>`` where the path joins
  the dict keys and list indexes leading to the job with ``/``.
* ``skip-queue-pr`` — the PR number, when one is given and the skip-queue label is set.

:func:`annotate` returns a new payload; :func:`dumps` serialises it exactly as the
reference prints it (compact separators, ASCII escapes, a final newline), so that
``ixtool ci priority`` output is byte-identical to ``ci_priority.py``'s.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from inferencex_tools.errors import InputError

_POLICY_HINT = "compare with configs/ci-priority.yaml of the repository (docs/ci.md)"

QUANTUM = Decimal("0.001")
TOKEN_HEX = 32
BASE_CRITERIA = frozenset({"multi-node", "agentic", "eval-only", "checklist-complete",
                           "patchwork"})


@dataclass(frozen=True)
class Context:
    """The facts of one scoring run (the reference's command-line context)."""

    event_name: str = ""
    labels: frozenset[str] = frozenset()
    namespace: str = "local"
    pr_number: int | None = None
    criteria: frozenset[str] | None = None


@dataclass(frozen=True)
class Policy:
    """A validated ``ci-priority.yaml`` (version 1)."""

    base_score: Decimal
    event: dict[str, Decimal] = field(default_factory=dict)
    multi_node: Decimal = Decimal(0)
    agentic: Decimal = Decimal(0)
    eval_only: Decimal = Decimal(0)
    precision: dict[str, Decimal] = field(default_factory=dict)
    spec_decoding: dict[str, Decimal] = field(default_factory=dict)
    framework_prefix: tuple[tuple[str, Decimal], ...] = ()
    model_prefix: dict[str, Decimal] = field(default_factory=dict)
    patch_names: frozenset[str] = frozenset()
    patch_score: Decimal = Decimal(0)
    waived_by: frozenset[str] = frozenset()
    checklist_names: frozenset[str] = frozenset()
    checklist_adjustment: Decimal = Decimal(0)
    skip_queue_label: str | None = None

    def supported_criteria(self) -> frozenset[str]:
        """Every classifier fact the policy understands."""
        return (BASE_CRITERIA | set(self.precision) | set(self.spec_decoding)
                | {p for p, _ in self.framework_prefix} | set(self.model_prefix))


# ------------------------------------------------------------------------- policy

def _number(value: Any, where: str, source: str) -> Decimal:
    """``Decimal(str(value))`` for a YAML number (what the reference computes with)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InputError(f"{source}: {where} must be a number, got {value!r}",
                         hint="scores and adjustments are decimal numbers, e.g. 0.75")
    try:
        out = Decimal(str(value))
    except InvalidOperation:
        raise InputError(f"{source}: {where} must be a number, got {value!r}",
                         hint="scores and adjustments are decimal numbers, e.g. 0.75") from None
    if not out.is_finite():
        raise InputError(f"{source}: {where} must be a finite number, got {value!r}",
                         hint=_POLICY_HINT)
    return out


def _table(value: Any, where: str, source: str) -> dict[str, Decimal]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{source}: {where} must be a mapping of name → adjustment",
                         hint=_POLICY_HINT)
    return {str(k): _number(v, f"{where}.{k}", source) for k, v in value.items()}


def _names(value: Any, where: str, source: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{source}: {where} must be a list of label names",
                         hint=_POLICY_HINT)
    return frozenset(value)


def parse_policy(data: Any, source: str = "ci-priority.yaml") -> Policy:
    """Loaded YAML → :class:`Policy`; :class:`InputError` for what the reference cannot use."""
    if not isinstance(data, Mapping):
        raise InputError(f"{source}: the priority policy must be a mapping",
                         hint=_POLICY_HINT)
    version = data.get("version")
    if isinstance(version, bool) or version != 1:
        raise InputError(f"{source}: unsupported CI priority policy version: {version!r}",
                         hint="this policy format is version 1")
    if "base-score" not in data:
        raise InputError(f"{source}: 'base-score' is required",
                         hint=_POLICY_HINT)
    adj = data.get("adjustments")
    if not isinstance(adj, Mapping):
        raise InputError(f"{source}: 'adjustments' must be a mapping",
                         hint=_POLICY_HINT)
    labels = data.get("labels")
    if not isinstance(labels, Mapping):
        raise InputError(f"{source}: 'labels' must be a mapping",
                         hint=_POLICY_HINT)
    patch = labels.get("patchwork")
    if not isinstance(patch, Mapping) or "names" not in patch or "score" not in patch:
        raise InputError(f"{source}: labels.patchwork needs 'names' and 'score'",
                         hint=_POLICY_HINT)
    checklist = labels.get("checklist-complete") or {}
    if not isinstance(checklist, Mapping):
        raise InputError(f"{source}: labels.checklist-complete must be a mapping",
                         hint=_POLICY_HINT)
    skip = labels.get("skip-queue")
    skip_name: str | None = None
    if skip is not None:
        if not isinstance(skip, Mapping) or not isinstance(skip.get("name"), str):
            raise InputError(f"{source}: labels.skip-queue needs a 'name'",
                             hint=_POLICY_HINT)
        skip_name = skip["name"]
    fw = adj.get("framework-prefix") or {}
    if not isinstance(fw, Mapping):
        raise InputError(f"{source}: adjustments.framework-prefix must be a mapping",
                         hint=_POLICY_HINT)
    return Policy(
        base_score=_number(data["base-score"], "base-score", source),
        event=_table(adj.get("event"), "adjustments.event", source),
        multi_node=_number(adj.get("multi-node", 0), "adjustments.multi-node", source),
        agentic=_number(adj.get("agentic", 0), "adjustments.agentic", source),
        eval_only=_number(adj.get("eval-only", 0), "adjustments.eval-only", source),
        precision=_table(adj.get("precision"), "adjustments.precision", source),
        spec_decoding=_table(adj.get("spec-decoding"), "adjustments.spec-decoding", source),
        framework_prefix=tuple(
            (str(k), _number(v, f"adjustments.framework-prefix.{k}", source))
            for k, v in fw.items()),
        model_prefix=_table(adj.get("model-prefix"), "adjustments.model-prefix", source),
        patch_names=_names(patch.get("names"), "labels.patchwork.names", source),
        patch_score=_number(patch.get("score"), "labels.patchwork.score", source),
        waived_by=_names(patch.get("waived-by"), "labels.patchwork.waived-by", source),
        checklist_names=_names(checklist.get("names"), "labels.checklist-complete.names",
                               source),
        checklist_adjustment=_number(checklist.get("adjustment", 0),
                                     "labels.checklist-complete.adjustment", source),
        skip_queue_label=skip_name,
    )


def parse_string_list(raw: str | None, option: str) -> frozenset[str] | None:
    """A JSON array of strings (``--labels-json``/``--criteria-json``); ``""``/null → None."""
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise InputError(f"{option}: not valid JSON ({exc})",
                         hint=f"{option} takes a JSON array of strings") from None
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{option} must be a JSON array of strings",
                         hint=f"""e.g. {option} '["full-sweep"]'""")
    return frozenset(value)


# ------------------------------------------------------------------------ scoring

def _str(value: Any) -> str:
    """``str()`` of a JSON value as Python prints it (None → 'None', True → 'True')."""
    return str(value)


def _prefix_match(value: str, prefix: str) -> bool:
    return value == prefix or value.startswith(prefix + "-")


def _masked(job: Mapping[str, Any], policy: Policy, criteria: frozenset[str]) -> dict[str, Any]:
    """The job as the classifier's criteria let it count (facts not named are blanked)."""
    unknown = criteria - policy.supported_criteria()
    if unknown:
        raise InputError(f"unknown CI priority criteria: {sorted(unknown)}",
                         hint="criteria are the policy's facts: " +
                         ", ".join(sorted(policy.supported_criteria())))
    precision = _str(job.get("precision", ""))
    spec = _str(job.get("spec-decoding", ""))
    framework = _str(job.get("framework", ""))
    model = _str(job.get("model-prefix", ""))
    return {
        "prefill": {} if "multi-node" in criteria and job.get("prefill") is not None else None,
        "scenario-type": ("agentic-coding" if "agentic" in criteria
                          and job.get("scenario-type") == "agentic-coding" else ""),
        "eval-only": "eval-only" in criteria and job.get("eval-only") is True,
        "precision": precision if precision in criteria else "",
        "spec-decoding": spec if spec in criteria else "",
        "framework": framework if any(
            c in criteria and _prefix_match(framework, c)
            for c, _ in policy.framework_prefix) else "",
        "model-prefix": model if any(
            c in criteria and _prefix_match(model, c) for c in policy.model_prefix) else "",
        "node-count": job.get("node-count", 1),
    }


def score(job: Mapping[str, Any], policy: Policy, ctx: Context) -> Decimal:
    """The higher-is-sooner score of one job, quantized to 0.001 (half-up)."""
    crit = ctx.criteria
    patched = (crit is not None and "patchwork" in crit) or bool(ctx.labels & policy.patch_names)
    if patched and not ctx.labels & policy.waived_by:
        return policy.patch_score.quantize(QUANTUM, ROUND_HALF_UP)
    if crit is not None:
        job = _masked(job, policy, crit)
    total = policy.base_score + policy.event.get(ctx.event_name, Decimal(0))
    nodes = job.get("node-count", 1)
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
        raise InputError(f"node-count must be a positive integer, got {nodes!r}",
                         hint="pass the JSON that ixtool sweep printed (--matrix FILE)")
    if job.get("prefill") is not None:
        total += policy.multi_node
    if job.get("scenario-type") == "agentic-coding":
        total += policy.agentic
    if job.get("eval-only") is True:
        total += policy.eval_only
    total += policy.precision.get(_str(job.get("precision", "")), Decimal(0))
    total += policy.spec_decoding.get(_str(job.get("spec-decoding", "")), Decimal(0))
    framework = _str(job.get("framework", ""))
    for prefix, adj in policy.framework_prefix:
        if _prefix_match(framework, prefix):
            total += adj
            break
    total += policy.model_prefix.get(_str(job.get("model-prefix", "")), Decimal(0))
    if (crit is not None and "checklist-complete" in crit) or ctx.labels & policy.checklist_names:
        total += policy.checklist_adjustment
    return total.quantize(QUANTUM, ROUND_HALF_UP)


def format_score(value: Decimal) -> str:
    return f"{value:.3f}"


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def queue_token(job: Any, namespace: str, path: Iterable[str]) -> str:
    material = f"{namespace}:{'/'.join(path)}:{canonical(job)}".encode()
    return hashlib.sha256(material).hexdigest()[:TOKEN_HEX]


def is_job(value: Any) -> bool:
    return isinstance(value, dict) and "runner" in value and "framework" in value


def annotate(value: Any, policy: Policy, ctx: Context, path: tuple[str, ...] = ()) -> Any:
    """A copy of ``value`` with every job annotated (lists and dicts at any depth)."""
    if isinstance(value, list):
        return [annotate(v, policy, ctx, (*path, str(i))) for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    out = {k: annotate(v, policy, ctx, (*path, k)) for k, v in value.items()}
    if "runner" in value and "framework" in value:
        annotate_job(out, value, policy, ctx, path)
    return out


def annotate_job(out: dict[str, Any], job: Mapping[str, Any], policy: Policy, ctx: Context,
                 path: tuple[str, ...]) -> None:
    """Add ``priority``/``queue-token``/``skip-queue-pr`` for ``job`` to ``out`` in place."""
    out["priority"] = format_score(score(job, policy, ctx))
    out["queue-token"] = queue_token(job, ctx.namespace, path)
    if ctx.pr_number is not None:
        if policy.skip_queue_label is None:
            raise InputError("the priority policy has no labels.skip-queue.name, needed with "
                             "a PR number",
                             hint="add labels.skip-queue.name to the policy, or drop --pr-number")
        if policy.skip_queue_label in ctx.labels:
            out["skip-queue-pr"] = ctx.pr_number


def dumps(value: Any) -> str:
    """The reference's output: compact JSON, ASCII escapes, one final newline."""
    return json.dumps(value, separators=(",", ":")) + "\n"


def count_jobs(value: Any) -> int:
    if isinstance(value, list):
        return sum(count_jobs(v) for v in value)
    if isinstance(value, dict):
        return int(is_job(value)) + sum(count_jobs(v) for v in value.values())
    return 0


__all__ = ["Context", "Policy", "annotate", "count_jobs", "dumps", "parse_policy",
           "parse_string_list", "queue_token", "score"]
