"""GitHub Actions expressions: data-driven cases (value and error)."""

from __future__ import annotations

from typing import Any

import pytest

from inferencex_tools.workflow.expr import (
    ExpressionError,
    evaluate,
    evaluate_value,
    interpolate,
    to_string,
)

CTX: dict[str, Any] = {
    "inputs": {"scenario-type": "agentic-coding", "eval-only": False, "tp": "8",
               "list": '["A=1", "B=2"]'},
    "matrix": {"config": {"pp": 1, "router": None, "kv-offload-backend": {"name": "mooncake"},
                          "labels": ["x", "Y"]}},
    "github": {"event": {"pull_request": {"labels": [{"name": "agentx-fast"}]}}},
}

CASES = [
    ("inputs.scenario-type == 'agentic-coding' && 'agentic/' || 'fixed_seq_len/'", "agentic/"),
    ("inputs.scenario-type == 'fixed-seq-len' && 'agentic/' || 'fixed_seq_len/'",
     "fixed_seq_len/"),
    ("inputs.eval-only && '1' || '0'", "0"),
    ("!inputs.eval-only", True),
    ("inputs.tp == 8", True),  # loose equality: number coercion
    ("'ABC' == 'abc'", True),  # strings compare case-insensitively
    ("matrix.config.pp", 1),
    ("matrix.config.missing", None),
    ("matrix.config.missing.deeper", None),
    ("matrix.config['kv-offload-backend'].name", "mooncake"),
    ("matrix.config.router && toJson(matrix.config.router) || ''", ""),
    ("format('{0}-{1}{{x}}', 'a', 3)", "a-3{x}"),
    ("join(fromJson(inputs.list), ' ')", "A=1 B=2"),
    ("contains(matrix.config.labels, 'y')", True),
    ("contains('Hello', 'ELL')", True),
    ("startsWith('cluster:h200', 'CLUSTER')", True),
    ("endsWith('abc', 'bc')", True),
    ("contains(github.event.pull_request.labels.*.name, 'agentx-fast')", True),
    ("1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 4", False),
    ("null == null", True),
    ("0x10 == 16", True),
    ("''", ""),
    ("(1 == 1) && 'yes'", "yes"),
    ("success() && !cancelled()", True),
]


@pytest.mark.parametrize(("expr", "want"), CASES, ids=[c[0][:40] for c in CASES])
def test_evaluate(expr: str, want: Any) -> None:
    assert evaluate(expr, CTX) == want


@pytest.mark.parametrize("expr", ["1 +", "foo(", "bar()", "'open", "a.[", "format('{3}', 1)",
                                  "fromJson('{')", "(" * 100 + "1" + ")" * 100])
def test_errors(expr: str) -> None:
    with pytest.raises(ExpressionError):
        evaluate(expr, CTX)


def test_interpolation_and_types() -> None:
    assert interpolate("tp${{ inputs.tp }}-pp${{ matrix.config.pp }}", CTX) == "tp8-pp1"
    # a lone expression keeps its type; anything around it makes a string
    assert evaluate_value("${{ matrix.config.pp }}", CTX) == 1
    assert evaluate_value(" ${{ inputs.eval-only }} ", CTX) is False
    assert evaluate_value("x${{ inputs.eval-only }}", CTX) == "xfalse"
    assert evaluate_value("${{ inputs.tp }}_${{ inputs.tp }}", CTX) == "8_8"
    assert [to_string(v) for v in (None, True, 2.0, 2.5, {"a": 1}, [1])] == \
        ["", "true", "2", "2.5", "Object", "Array"]


def test_a_lone_object_is_not_a_scalar() -> None:
    from inferencex_tools.workflow.expr import NotScalar, evaluate_scalar

    ctx = {"matrix": {"config": {"b": {"name": "x"}, "l": [1], "n": 2}}}
    for expr, kind in (("${{ matrix.config.b }}", "mapping"),
                       (" ${{ matrix.config.l }} ", "sequence"),
                       ("${{ matrix.config.*.name }}", "sequence")):
        with pytest.raises(NotScalar, match=f"a {kind} was not expected"):
            evaluate_scalar(expr, ctx)
    assert evaluate_scalar("${{ matrix.config.n }}", ctx) == 2
    assert evaluate_scalar("${{ matrix.config.b.name }}", ctx) == "x"
    assert evaluate_scalar("b=${{ matrix.config.b }}", ctx) == "b=Object"
