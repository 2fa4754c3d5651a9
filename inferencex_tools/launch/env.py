"""Row → the environment the benchmark workflow exports to the launcher.

These are the variables a CI job sets before it runs ``runners/launch_<family>.sh``:
the inputs this repository's launchers document (``EXP_NAME MODEL IMAGE PRECISION
FRAMEWORK SCENARIO_TYPE SPEC_DECODING TP EP CONC PP …``) plus the reference
workflow's spellings of the same values (``EP_SIZE``, ``PP_SIZE``, ``GPU_COUNT`` …)
so reference-style launchers work too.  Values are strings as a workflow renders
them (booleans lower-case, JSON for structured metadata, ``0`` for absent lengths).
"""

from __future__ import annotations

import json
from typing import Any

AGENTIC = "agentic-coding"


def _s(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    if isinstance(v, dict | list):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def gpu_count(row: dict[str, Any]) -> int:
    """GPUs one job needs: tp·pp·pcp for single-node rows (nodes × gpus otherwise)."""
    if row.get("prefill") is not None:
        total = 0
        for side in ("prefill", "decode"):
            w = row.get(side) or {}
            total += int(w.get("num-worker", 1)) * int(w.get("tp", 1)) * int(w.get("pp", 1))
        return total
    return int(row.get("tp", 1)) * int(row.get("pp", 1)) * int(row.get("pcp-size", 1))


def result_filename(row: dict[str, Any], node: str) -> str:
    return (f"{row.get('exp-name')}_{row.get('precision')}_{row.get('framework')}"
            f"_tp{row.get('tp')}-pp{row.get('pp', 1)}-dcp{row.get('dcp-size', 1)}"
            f"-pcp{row.get('pcp-size', 1)}-ep{row.get('ep', 1)}-dpa{_s(row.get('dp-attn', False))}"
            f"_disagg-{_s(row.get('disagg', False))}_spec-{row.get('spec-decoding', 'none')}"
            f"_conc{row.get('conc')}_{node}")


def row_env(row: dict[str, Any], *, node: str, workspace: str,
            eval_only: bool = False) -> dict[str, str]:
    """The variables exported for ``row`` when it runs on ``node``."""
    agentic = row.get("scenario-type") == AGENTIC
    backend = row.get("kv-offload-backend")
    run_eval = eval_only or bool(row.get("run-eval"))
    env = {
        "RUNNER_NAME": node,
        "RUNNER_TYPE": _s(row.get("runner")),
        "GITHUB_WORKSPACE": workspace,
        "EXP_NAME": _s(row.get("exp-name")),
        "MODEL": _s(row.get("model")),
        "MODEL_PREFIX": _s(row.get("model-prefix")),
        "IMAGE": _s(row.get("image")),
        "PRECISION": _s(row.get("precision")),
        "FRAMEWORK": _s(row.get("framework")),
        "SCENARIO_TYPE": _s(row.get("scenario-type", "fixed-seq-len")),
        "SPEC_DECODING": _s(row.get("spec-decoding", "none")),
        "TP": _s(row.get("tp")),
        "EP": _s(row.get("ep", 1)),
        "PP": _s(row.get("pp", 1)),
        "DCP_SIZE": _s(row.get("dcp-size", 1)),
        "PCP_SIZE": _s(row.get("pcp-size", 1)),
        "DP_ATTENTION": _s(bool(row.get("dp-attn", False))),
        "CONC": _s(row.get("conc")),
        "ISL": "0" if agentic else _s(row.get("isl")),
        "OSL": "0" if agentic else _s(row.get("osl")),
        "MAX_MODEL_LEN": "0" if agentic else _s(row.get("max-model-len")),
        "DISAGG": "false" if agentic else _s(row.get("disagg", False)),
        "KV_OFFLOADING": _s(row.get("kv-offloading")) if agentic else "",
        "KV_OFFLOAD_BACKEND": _s(backend.get("name")) if agentic and isinstance(backend, dict)
        else "",
        "KV_OFFLOAD_BACKEND_METADATA": _s(backend) if agentic and backend else "",
        "TOTAL_CPU_DRAM_GB": _s(row.get("total-cpu-dram-gb", 0)) if agentic else "0",
        "DURATION": _s(row.get("duration", 3600)),
        "ROUTER_METADATA": _s(row.get("router")) if row.get("router") else "",
        "KV_P2P_TRANSFER": _s(row.get("kv-p2p-transfer")),
        "RUN_EVAL": _s(run_eval),
        "EVAL_ONLY": _s(eval_only),
        "IS_MULTINODE": _s(row.get("prefill") is not None),
        "IS_AGENTIC": "1" if agentic else "0",
        "SCENARIO_SUBDIR": "agentic/" if agentic else "fixed_seq_len/",
        # the reference launchers' spellings of the same values
        "EP_SIZE": _s(row.get("ep", 1)),
        "PP_SIZE": _s(row.get("pp", 1)),
        "GPU_COUNT": str(gpu_count(row)),
        "RESULT_FILENAME": result_filename(row, node),
    }
    return env


# runner-local paths of the derived job environment: the sandbox provides its own
_RUNNER_PATHS = frozenset({"HOME", "GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH",
                           "GITHUB_STATE", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_PATH",
                           "RUNNER_TEMP", "RUNNER_TOOL_CACHE", "GITHUB_WORKSPACE"})


def job_env(row: dict[str, Any], *, node: str, workspace: str, eval_only: bool = False,
            workflows: Any = None) -> tuple[dict[str, str], str]:
    """The launcher's environment for ``row`` on ``node`` and where it came from: the
    benchmark workflow template that dispatches the row (shared derivation,
    :func:`inferencex_tools.workflow.jobenv.job_environment`: its ``env:`` blocks, step
    env and run-step exports, e.g. ``RESULT_DIR``) over the built-in :func:`row_env`;
    the built-in one alone when no workflow dispatches the row's bucket."""
    env = row_env(row, node=node, workspace=workspace, eval_only=eval_only)
    if workflows is None:
        return env, "built-in"
    from inferencex_tools.workflow.jobenv import LocalPaths, job_environment

    wrow = dict(row)
    if eval_only:
        wrow["run-eval"], wrow["eval-only"] = True, True
    je = job_environment(workflows, wrow, node=node,
                         paths=LocalPaths(workspace=workspace, runner_root="/github/runner"))
    if je is None:
        return env, "built-in"
    for k, v in je.env.items():
        if k not in _RUNNER_PATHS:
            env[k] = v
    return env, f"{je.template} ({je.dispatch})"
