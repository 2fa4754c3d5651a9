"""Static extraction for multi-node recipe YAMLs (srt-slurm style), marked "static".

Multi-node launchers clone external srt-slurm refs and submit with ``srtctl``/``sbatch``,
so they cannot be traced offline (TRACING-NOTES pitfall 8).  Their recipes are data:
this module reads the decode worker (or the aggregated worker) of a recipe, models the
runner's synthetic-acceptance injection and the launchers' EVAL_ONLY edits
(POLICY.md G-11, G-12), and produces a pseudo launch :class:`Record` that the per-engine
parsers of :mod:`engines` read like a traced one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from inferencex_tools.errors import YamlError
from inferencex_tools.io.yamlio import load_safe
from inferencex_tools.policy.trace import Record

# runner injection happens only on these launcher families and frameworks (G-11)
INJECTING_RUNNERS = ("gb200-nv", "gb300-nv", "b200-nscale-slurm")
INJECTING_FRAMEWORKS = ("dynamo-vllm", "dynamo-sglang")
ENGINE_OF_BACKEND = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trt", "trt": "trt",
                     "tensorrt-llm": "trt", "atom": "atom"}


@dataclass
class StaticLaunch:
    record: Record | None
    engine: str | None
    notes: list[str]
    error: str | None = None


def _select(doc: Any, selector: str | None) -> Any:
    """Zip recipes: ``base`` merged with the named override, element ``[i]`` of lists."""
    if not isinstance(doc, dict) or "base" not in doc:
        return doc
    if not selector:
        return doc["base"]
    m = re.fullmatch(r"([^\[\]]+)(?:\[(\d+)\])?", selector)
    if not m:
        return doc["base"]
    name, idx = m.group(1), int(m.group(2) or 0)
    override = doc.get(name) or (doc.get("overrides") or {}).get(name) or {}
    return _merge(doc["base"], _pick(override, idx))


def _pick(node: Any, i: int) -> Any:
    if isinstance(node, list):
        return _pick(node[i] if i < len(node) else node[-1], i) if node else node
    if isinstance(node, dict):
        return {k: _pick(v, i) for k, v in node.items()}
    return node


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base.get(k), v) if k in base else v
        return out
    return over


def _argv(args: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for k, v in args.items():
        flag = "--" + str(k).replace("_", "-")
        if v is True:
            out.append(flag)
        elif v is False or v is None:
            continue
        elif isinstance(v, dict | list):
            out += [flag, json.dumps(v)]
        else:
            out += [flag, str(v)]
    return out


def extract(text: str, source: str, *, selector: str | None, framework: str, runner: str,
            settings: dict[str, str], eval_only: bool) -> StaticLaunch:
    """The decode/aggregated worker of one recipe as a pseudo launch record."""
    try:
        doc = _select(load_safe(text, source=source), selector)
    except YamlError as exc:
        return StaticLaunch(None, None, [], f"{source}: {exc.detail}")
    if not isinstance(doc, dict) or not isinstance(doc.get("backend"), dict):
        return StaticLaunch(None, None, [], f"{source}: no backend: mapping")
    backend: dict[str, Any] = doc["backend"]
    engine = ENGINE_OF_BACKEND.get(str(backend.get("type", "")).lower())
    if engine is None:
        for eng, key in (("sglang", "sglang_config"), ("vllm", "vllm_config"),
                         ("trt", "trtllm_config")):
            if key in backend:
                engine = eng
                break
    if engine is None:
        return StaticLaunch(None, None, [], f"{source}: backend type unknown")
    cfg_key = {"vllm": "vllm_config", "sglang": "sglang_config", "trt": "trtllm_config",
               "atom": "atom_config"}[engine]
    workers = backend.get(cfg_key) or {}
    role = "aggregated" if "aggregated" in workers or "aggregated_environment" in backend \
        else "decode"
    args = dict(workers.get(role) or {}) if isinstance(workers, dict) else {}
    env: dict[str, str] = {str(k): str(v) for k, v in (doc.get("environment") or {}).items()}
    env.update({str(k): str(v)
                for k, v in (backend.get(f"{role}_environment") or {}).items()})
    notes = [f"static: {role} worker of {source}" + (f" ({selector})" if selector else "")]
    model = str((doc.get("model") or {}).get("path", "model"))

    # runner injection (modelled exactly: no-op under EVAL_ONLY)
    family = runner.split(":", 1)[-1]
    if settings.get("SYNTHETIC_ACCEPTANCE") == "true" and not eval_only:
        if family.startswith(INJECTING_RUNNERS) and framework in INJECTING_FRAMEWORKS:
            length = settings.get("SYNTHETIC_ACCEPTANCE_LENGTH")
            if length is None:
                notes.append("injector auto-lookup (benchmarks/speedbench-reference-al.yaml) "
                             "does not exist: nothing injected")
            elif engine == "vllm" and "speculative-config" in args:
                spec = args["speculative-config"]
                spec = json.loads(spec) if isinstance(spec, str) else dict(spec)
                spec.update({"rejection_sample_method": "synthetic",
                             "synthetic_acceptance_length": float(length)})
                args["speculative-config"] = spec
                notes.append(f"runner injection: synthetic_acceptance_length {length}")
            elif engine == "sglang":
                env.update({"SGLANG_SIMULATE_ACC_LEN": length,
                            "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
                            "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"})
                notes.append(f"runner injection: SGLANG_SIMULATE_ACC_LEN {length}")
        else:
            notes.append(f"SYNTHETIC_ACCEPTANCE=true has no effect on {family} / {framework}")
    # launchers' EVAL_ONLY edits: gb300-nv deletes the TRT forcing lines
    if eval_only and engine == "trt" and family.startswith("gb300-nv"):
        env.pop("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", None)
    files: dict[str, str] = {}
    if engine == "vllm":
        if isinstance(args.get("speculative-config"), dict):
            args["speculative-config"] = json.dumps(args["speculative-config"])
        argv = ["vllm", "serve", model, *_argv(args)]
        tool = "vllm"
    elif engine == "sglang":
        argv = ["python3", "-m", "sglang.launch_server", "--model-path", model, *_argv(args)]
        tool = "python -m sglang.launch_server"
    elif engine == "trt":
        files["recipe-worker.yaml"] = json.dumps(args)
        argv = ["trtllm-serve", model, "--config", "recipe-worker.yaml"]
        tool = "trtllm-serve"
    else:
        argv = ["python3", "-m", "atom.entrypoints.openai_server", "--model", model,
                *_argv(args)]
        tool = "python -m atom.entrypoints.openai_server"
    rec = Record(tool=tool, argv=tuple(argv), env=env, cwd="", files=files, seq=0)
    return StaticLaunch(rec, engine, notes)
