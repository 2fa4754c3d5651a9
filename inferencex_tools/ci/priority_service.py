"""I/O for ``ixtool ci priority``: read the policy and the matrix, annotate, serialise."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from inferencex_tools.ci.priority import (
    Context,
    Policy,
    annotate,
    dumps,
    parse_policy,
    parse_string_list,
)
from inferencex_tools.errors import InputError
from inferencex_tools.io.files import DEFAULT_MAX_BYTES

DEFAULT_POLICY = "configs/ci-priority.yaml"


@dataclass(frozen=True)
class PriorityRequest:
    """The reference's argv, parsed (``ci_priority.py`` defaults)."""

    policy: str = DEFAULT_POLICY
    event_name: str = ""
    labels_json: str = "[]"
    namespace: str = "local"
    pr_number: int | None = None
    criteria_json: str = ""


def load_policy(path: str | Path) -> Policy:
    from inferencex_tools.io.files import read_bytes
    from inferencex_tools.io.yamlio import load_safe

    p = Path(path)
    if not p.is_file():
        raise InputError(f"priority policy '{p}' does not exist",
                         hint="pass --policy or run from the repository root")
    return parse_policy(load_safe(read_bytes(p), source=str(p)), str(p))


def context_of(req: PriorityRequest) -> Context:
    return Context(
        event_name=req.event_name,
        labels=parse_string_list(req.labels_json, "--labels-json") or frozenset(),
        namespace=req.namespace,
        pr_number=req.pr_number,
        criteria=parse_string_list(req.criteria_json, "--criteria-json"),
    )


def parse_payload(raw: bytes, source: str) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{source}: the matrix is not UTF-8",
                         hint="pass the JSON that ixtool sweep printed") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InputError(f"{source}: the matrix is not valid JSON ({exc})",
                         hint="pipe the output of `ixtool sweep …` into `ixtool ci priority`"
                         ) from None


def read_stream(stream: BinaryIO, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """All of a byte stream (stdin), refusing more than ``max_bytes``."""
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(f"<stdin>: more than {max_bytes // (1024 * 1024)} MiB of input",
                         hint="pass the matrix with --input FILE")
    return data


def run_priority(req: PriorityRequest, raw: bytes, source: str) -> str:
    """Annotated matrix text, byte-identical to ``ci_priority.py``'s stdout."""
    policy = load_policy(req.policy)
    ctx = context_of(req)
    return dumps(annotate(parse_payload(raw, source), policy, ctx))
