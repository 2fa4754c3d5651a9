"""Rows of ``sweep from-changelog`` laid out the way the reference dumps them, pure.

The reference ``process_changelog.py`` does not print the generator's rows as they
come: it validates its whole output with a model per row kind and prints the model's
dump (by alias, nulls dropped; CHANGELOG.md §4.6).  A dump differs from the
generator's row in two ways this module reproduces:

* **key order** is the model's field order, not the generator's (``spec-decoding``
  right after ``framework`` on fixed-seq-len rows, for example);
* **defaults are filled in**: ``eval-only: false`` on fixed-seq-len rows,
  ``eval-all-concs: false`` on multi-node fixed-seq-len rows, and on every worker
  (``prefill``/``decode``) ``pp``/``dcp-size``/``pcp-size`` 1 and
  ``additional-settings: []``.

Keys the models do not know (the reference would refuse the row) are kept, after the
known ones, in their original order; ``null`` values are dropped.
"""

from __future__ import annotations

from typing import Any

Row = dict[str, Any]

_HEAD = ("image", "model", "model-prefix", "precision", "framework")
_EVAL_META = ("eval-framework", "eval-suite")

#: Field order and defaults of each row kind's model (alias, default or ``_REQUIRED``).
_REQUIRED = object()
_Fields = tuple[tuple[str, Any], ...]


def _fields(*names: str, **defaults: Any) -> _Fields:
    return tuple((n, defaults.get(n.replace("-", "_"), _REQUIRED)) for n in names)


SINGLE_FIXED = _fields(
    *_HEAD, "spec-decoding", "runner", "isl", "osl", "tp", "pp", "dcp-size", "pcp-size",
    "ep", "dp-attn", "conc", "max-model-len", "exp-name", "disagg", "run-eval", "eval-only",
    *_EVAL_META, "router", "recipe-fingerprint", eval_only=False)
MULTI_FIXED = _fields(
    *_HEAD, "spec-decoding", "runner", "node-count", "isl", "osl", "prefill", "decode",
    "conc", "max-model-len", "exp-name", "disagg", "run-eval", "eval-only", "eval-conc",
    "eval-all-concs", *_EVAL_META, "router", "kv-p2p-transfer", "recipe-fingerprint",
    eval_only=False, eval_all_concs=False)
SINGLE_AGENTIC = _fields(
    *_HEAD, "runner", "tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn", "spec-decoding",
    "conc", "kv-offloading", "kv-offload-backend", "router", "total-cpu-dram-gb",
    "duration", "exp-name", "scenario-type", "run-eval", "eval-only", *_EVAL_META,
    "recipe-fingerprint", spec_decoding="none")
MULTI_AGENTIC = _fields(
    *_HEAD, "spec-decoding", "runner", "node-count", "prefill", "decode", "conc",
    "kv-offloading", "kv-offload-backend", "router", "kv-p2p-transfer", "total-cpu-dram-gb",
    "duration", "exp-name", "disagg", "scenario-type", "run-eval", "eval-only", "eval-conc",
    *_EVAL_META, "recipe-fingerprint")
WORKER = _fields(
    "num-worker", "tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn", "hardware",
    "additional-settings", pp=1, dcp_size=1, pcp_size=1, additional_settings=[])
COMPONENT = _fields("name", "version")
_NESTED = {"prefill": WORKER, "decode": WORKER, "router": COMPONENT,
           "kv-offload-backend": COMPONENT}


def model_of(row: Row) -> _Fields:
    """The model a row is validated with: multi-node when ``prefill`` is set, agentic
    when ``scenario-type`` says so."""
    agentic = row.get("scenario-type") == "agentic-coding"
    if row.get("prefill") is not None:
        return MULTI_AGENTIC if agentic else MULTI_FIXED
    return SINGLE_AGENTIC if agentic else SINGLE_FIXED


def lay_out(value: Any, fields: _Fields) -> Any:
    """``value`` dumped through ``fields``: model order, defaults filled, nulls dropped;
    a value that is not a mapping is returned as it is."""
    if not isinstance(value, dict):
        return value
    out: Row = {}
    for name, default in fields:
        v = value.get(name)
        if v is None and name not in value and default is not _REQUIRED:
            v = list(default) if isinstance(default, list) else default
        if v is None:
            continue
        out[name] = lay_out(v, _NESTED[name]) if name in _NESTED else v
    known = {n for n, _ in fields}
    for k, v in value.items():
        if k not in known and v is not None:
            out[k] = v
    return out


def dump_row(row: Row) -> Row:
    """One matrix row as the reference's model dumps it."""
    out: Row = lay_out(row, model_of(row))
    return out
