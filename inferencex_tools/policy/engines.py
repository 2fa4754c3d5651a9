"""Speculative-decoding facts of a captured server launch, per engine (POLICY.md G-08, G-11).

Pure: :class:`~inferencex_tools.sandbox.Record` in, :class:`SpecFacts` out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inferencex_tools.errors import YamlError
from inferencex_tools.io.yamlio import load_safe
from inferencex_tools.safetext import bounded_json
from inferencex_tools.schemas import short_repr

if TYPE_CHECKING:
    from inferencex_tools.sandbox import Record

ENGINES = ("vllm", "sglang", "trt", "atom")
FRAMEWORK_ENGINE = {
    "vllm": "vllm", "sglang": "sglang", "trt": "trt", "atom": "atom",
    "dynamo-vllm": "vllm", "dynamo-sglang": "sglang", "dynamo-trt": "trt",
    "llmd-vllm": "vllm", "sglang-disagg": "sglang", "atom-disagg": "atom",
}


def framework_engine(framework: str) -> str | None:
    """The engine a config's framework serves with: the table, else the one engine named
    among the framework's dash-separated parts (``dynamo-atom`` → atom); None when ixtool
    models none of them."""
    if framework in FRAMEWORK_ENGINE:
        return FRAMEWORK_ENGINE[framework]
    named = {FRAMEWORK_ENGINE[p] for p in framework.lower().split("-") if p in FRAMEWORK_ENGINE}
    return named.pop() if len(named) == 1 else None


_TRUE = {"1", "true", "yes", "on", "enabled"}
_FALSE = {"0", "false", "no", "off", "disabled"}


@dataclass
class Thinking:
    """The thinking mode of the served traffic and why (G-07)."""

    mode: str | None  # thinking_on | thinking_off | None (undetermined)
    evidence: str


@dataclass
class SpecFacts:
    engine: str
    server: str  # short description of the launch
    source: str = "trace"  # trace | static
    has_spec: bool = False
    method: str | None = None
    draft: str | None = None
    k: int | None = None
    sample: str | None = None
    sample_known: bool = False  # the launch states its draft sampling (vLLM's JSON does)
    synthetic: bool = False
    al: float | None = None  # canonical AL (bonus token included)
    raw: str | None = None  # the knob as written
    raw_value: float | None = None
    unit: str = "al"  # al | al-1 | rate
    issues: list[str] = field(default_factory=list)
    thinking_evidence: list[tuple[int, str, str]] = field(default_factory=list)

    def summary(self) -> str:
        if not self.has_spec:
            return f"{self.engine}: no speculative decoding"
        parts = [f"{self.engine} {self.method or '?'}", f"draft {self.draft or '(native)'}",
                 f"K={self.k if self.k is not None else '?'}"]
        parts.append(f"synthetic {self.raw}" if self.synthetic else "real verification")
        return ", ".join(parts)


def _opt(argv: Sequence[str], *names: str) -> str | None:
    """Last value of ``--name VALUE`` / ``--name=VALUE`` (``-`` and ``_`` equivalent)."""
    want = {n.replace("_", "-") for n in names}
    val: str | None = None
    for i, a in enumerate(argv):
        key, eq, rest = a.partition("=")
        key = key.replace("_", "-")
        if key in want:
            if eq:
                val = rest
            elif i + 1 < len(argv):
                val = argv[i + 1]
    return val


def _float(s: Any) -> float | None:
    if isinstance(s, bool) or not isinstance(s, int | float | str) or len(str(s)) > 100:
        return None
    try:
        return float(s)
    except (TypeError, ValueError, OverflowError):
        return None


def _int(s: Any) -> int | None:
    if isinstance(s, bool) or not isinstance(s, int | str):
        return None
    if isinstance(s, int):
        return s if abs(s) < 1 << 63 else None
    if len(s) > 30:
        return None
    try:
        return int(s)
    except ValueError:
        return None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _server_json(raw: str, flag: str, f: SpecFacts) -> Any:
    """A JSON server argument, parsed bounded (size, depth): None and an issue when it
    is not JSON or too large/deep."""
    try:
        return bounded_json(raw)
    except ValueError as exc:
        f.issues.append(f"{flag} is not usable JSON ({exc}): {short_repr(raw, 80)}")
        return None


def canonical_method(engine: str, raw: Any, draft: str | None) -> str | None:
    if not isinstance(raw, str):  # server arguments are untrusted data: typed, not trusted
        return None
    m = raw.strip().lower()
    if m in ("eagle3",):
        return "eagle3"
    if m in ("dspark",):
        return "dspark"
    if m in ("nextn", "mtp") or m.endswith("_mtp"):
        return "mtp"
    if m == "eagle":
        return "eagle" if (engine == "sglang" and draft) or engine != "sglang" else "mtp"
    return m


def engine_of(rec: Record) -> str | None:
    """Which inference server a record launches, if any."""
    tool, argv = rec.tool, rec.argv
    if tool == "vllm":
        return "vllm" if len(argv) > 1 and argv[1] == "serve" else None
    if tool.startswith("python -m "):
        mod = tool[len("python -m "):]
        for prefix, eng in (("vllm.entrypoints", "vllm"), ("sglang.launch_server", "sglang"),
                            ("atom.entrypoints", "atom"), ("dynamo.vllm", "vllm"),
                            ("dynamo.sglang", "sglang"), ("dynamo.trtllm", "trt"),
                            ("tensorrt_llm", "trt")):
            if mod == prefix or mod.startswith(prefix + "."):
                return eng
        return None
    if tool == "sglang":
        return "sglang" if len(argv) > 1 and argv[1] in ("serve", "launch_server") else None
    if tool == "atom":
        return "atom"
    if tool in ("trtllm-serve", "mpirun"):
        return "trt" if any(a.rsplit("/", 1)[-1] == "trtllm-serve" for a in argv) else None
    return None


def facts_of(rec: Record, engine: str) -> SpecFacts:
    head = " ".join(rec.argv[:3])
    f = SpecFacts(engine=engine, server=head)
    {"vllm": _vllm, "sglang": _sglang, "trt": _trt, "atom": _atom}[engine](rec, f)
    _thinking_env(rec.env, f)
    return f


# the vLLM options the policy reads whose value a shortened spelling could also set
_VLLM_READ = ("--speculative-config", "--default-chat-template-kwargs")


def vllm_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``argv`` as vLLM's argument parser (``FlexibleArgumentParser``) hands it to
    argparse, for the options the policy reads, and what cannot be judged from it.

    * ``--json-arg.key value`` / ``--json-arg.key=value`` (dotted keys, ``+`` for list
      items) are merged into one ``--json-arg <json>`` appended at the end: it replaces
      any earlier ``--json-arg`` (argparse keeps the last), exactly as vLLM does;
    * ``--config FILE`` adds arguments read from the file at run time (dotted keys among
      them end up last too): not judged, an issue;
    * argparse accepts a unique prefix of an option (``--speculative-conf`` is
      ``--speculative-config``): a shortened spelling of an option read here is an issue.
    """
    out: list[str] = []
    dotted: dict[str, Any] = {}
    issues: list[str] = []
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if not arg.startswith("--"):
            out.append(arg)
            continue
        name, eq, value = arg.partition("=")
        head, dot, rest = name.partition(".")
        head = head.replace("_", "-")
        if head == "--config":
            issues.append("vllm serve --config: arguments read from a file at run time "
                          "(a speculative config or dotted keys among them) are not judged")
        elif any(full.startswith(head) and full != head and len(head) > 3
                 for full in _VLLM_READ):
            issues.append(f"{head} is a shortened spelling vLLM's argparse expands to an "
                          "option the policy reads: spell it out")
        if not dot:
            out.append(head + eq + value)
            continue
        if not eq:
            value, skip = (argv[i + 1] if i + 1 < len(argv) else ""), True
        _dotted(dotted, head, rest, value)
    for head, tree in dotted.items():
        out += [head, json.dumps(tree)]
    return out, issues


def _dotted(into: dict[str, Any], head: str, path: str, value: str) -> None:
    """One dotted argument merged as vLLM merges it (JSON value, else the string)."""
    import contextlib

    keys = path.split(".")
    if keys[-1].endswith("+"):
        keys[-1] = keys[-1][:-1]
        item: Any = value.split(",")
    else:
        item = value
        with contextlib.suppress(ValueError, RecursionError):
            item = json.loads(value)
    node = into.setdefault(head, {})
    for k in keys[:-1]:
        nxt = node.get(k)
        if not isinstance(nxt, dict):
            nxt = node[k] = {}
        node = nxt
    last = keys[-1]
    if isinstance(item, list) and isinstance(node.get(last), list):
        node[last] += item
    else:
        node[last] = item


def _vllm(rec: Record, f: SpecFacts) -> None:
    argv, issues = vllm_argv(rec.argv)
    f.issues.extend(issues)
    raw = _opt(argv, "--speculative-config")
    if raw is not None:
        f.has_spec = True
        spec = _server_json(raw, "--speculative-config", f)
        if spec is not None and not isinstance(spec, dict):
            kind = _JSON_KIND.get(type(spec), "of another type")
            f.issues.append(f"--speculative-config is {kind}, not an object")
        if isinstance(spec, dict):
            _typed_fields(spec, f)
            f.draft = _str(spec.get("model"))
            f.method = canonical_method("vllm", spec.get("method"), f.draft)
            f.k = _int(spec.get("num_speculative_tokens"))
            sm = spec.get("draft_sample_method")
            f.sample_known = True
            f.sample = sm if isinstance(sm, str) and sm != "greedy" else None
            rej = spec.get("rejection_sample_method")
            length = spec.get("synthetic_acceptance_length")
            rates = spec.get("synthetic_acceptance_rates")
            length = length if isinstance(length, int | float | str) else None
            rates = short_repr(rates, 120) if rates is not None else None
            if rej == "synthetic":
                f.synthetic = True
                if length is not None:
                    f.raw = f"synthetic_acceptance_length={length}"
                    f.raw_value = f.al = _float(length)
                elif rates is not None:
                    f.raw = f"synthetic_acceptance_rates={rates}"
                    f.issues.append("synthetic_acceptance_rates instead of "
                                    "synthetic_acceptance_length: the mean AL is not pinned "
                                    "to the golden value")
                else:
                    f.raw = "rejection_sample_method=synthetic"
                    f.issues.append("rejection_sample_method synthetic without "
                                    "synthetic_acceptance_length")
            elif length is not None:
                f.synthetic = True
                f.raw = f"synthetic_acceptance_length={length}"
                f.raw_value = f.al = _float(length)
                f.issues.append(f"synthetic_acceptance_length without rejection_sample_method "
                                f"synthetic (got {rej!r}): vLLM refuses it; not a pinned AL")
    kw = _opt(argv, "--default-chat-template-kwargs")
    if kw is not None:
        kwargs = _server_json(kw, "--default-chat-template-kwargs", f)
        if isinstance(kwargs, dict):
            for key in ("thinking_mode", "enable_thinking", "thinking"):
                value = kwargs.get(key)
                if isinstance(value, str | bool | int | float):
                    mode = _mode(value)
                    if mode:
                        f.thinking_evidence.append(
                            (2, mode, f"--default-chat-template-kwargs {key}="
                                      f"{short_repr(value, 40)}"))
    _chat_template(argv, f)


# what vLLM's --speculative-config fields are (a value of another type is reported, and
# not used)
_JSON_KIND: dict[type, str] = {
    dict: "a JSON object", list: "a JSON array", str: "a JSON string", int: "a JSON integer",
    float: "a JSON number", bool: "a JSON boolean", type(None): "JSON null"}

_SPEC_TYPES: dict[str, tuple[type, ...]] = {
    "model": (str,), "method": (str,), "num_speculative_tokens": (int, str),
    "draft_sample_method": (str,), "rejection_sample_method": (str,),
    "synthetic_acceptance_length": (int, float, str),
    "synthetic_acceptance_rates": (list, str),
}


def _typed_fields(spec: dict[str, Any], f: SpecFacts) -> None:
    for key, types in _SPEC_TYPES.items():
        value = spec.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            f.issues.append(f"--speculative-config {key} is "
                            f"{_JSON_KIND.get(type(value), 'of another type')} "
                            f"({short_repr(value, 60)}), expected "
                            + " or ".join(_JSON_KIND.get(t, t.__name__).split(" ", 1)[1]
                                          for t in types))


def _chat_template(argv: Sequence[str], f: SpecFacts) -> None:
    tpl = _opt(argv, "--chat-template")
    if tpl and "thinking" in tpl.rsplit("/", 1)[-1].lower():
        f.thinking_evidence.append((2, "thinking_on", f"--chat-template {tpl}"))


def _mode(value: Any) -> str | None:
    s = str(value).strip().lower()
    if s in _TRUE:
        return "thinking_on"
    if s in _FALSE:
        return "thinking_off"
    return None


def _sglang(rec: Record, f: SpecFacts) -> None:
    algo = _opt(rec.argv, "--speculative-algorithm", "--speculative-algo")
    if algo is not None:
        f.has_spec = True
        f.draft = _opt(rec.argv, "--speculative-draft-model-path", "--speculative-draft-model")
        f.method = canonical_method("sglang", algo, f.draft)
        steps = _int(_opt(rec.argv, "--speculative-num-steps"))
        tokens = _int(_opt(rec.argv, "--speculative-num-draft-tokens"))
        f.k = steps if steps is not None else (tokens - 1 if tokens else None)
        topk = _int(_opt(rec.argv, "--speculative-eagle-topk"))
        if steps is not None and tokens is not None and (topk in (None, 1)) \
                and tokens != steps + 1:
            f.issues.append(f"--speculative-num-draft-tokens {tokens} is not num-steps + 1 "
                            f"({steps + 1}) with eagle-topk 1")
    acc = rec.env.get("SGLANG_SIMULATE_ACC_LEN")
    if acc is not None:
        f.synthetic = True
        f.raw = f"SGLANG_SIMULATE_ACC_LEN={acc}"
        f.raw_value = f.al = _float(acc)
        method = rec.env.get("SGLANG_SIMULATE_ACC_METHOD")
        token_mode = rec.env.get("SGLANG_SIMULATE_ACC_TOKEN_MODE")
        if method != "match-expected":
            f.issues.append(f"SGLANG_SIMULATE_ACC_METHOD is {method!r}, not 'match-expected'")
        if token_mode != "real-draft-token":
            f.issues.append(f"SGLANG_SIMULATE_ACC_TOKEN_MODE is {token_mode!r}, "
                            "not 'real-draft-token'")
    _chat_template(rec.argv, f)


def _trt(rec: Record, f: SpecFacts) -> None:
    cfg_path = _opt(rec.argv, "--config", "--extra_llm_api_options", "--extra-llm-api-options")
    spec: Any = None
    if cfg_path is not None:
        text = rec.files.get(cfg_path)
        if text is None:
            f.issues.append(f"TRT config {cfg_path} was not readable at launch")
        else:
            try:
                doc = load_safe(text, source=cfg_path)
            except YamlError as exc:
                f.issues.append(f"TRT config {cfg_path}: {exc.detail}")
                doc = None
            if isinstance(doc, dict):
                spec = doc.get("speculative_config")
    if isinstance(spec, dict):
        f.has_spec = True
        d = spec.get("speculative_model_dir") or spec.get("speculative_model")
        f.draft = d if isinstance(d, str) else None
        f.method = canonical_method("trt", spec.get("decoding_type"), f.draft)
        f.k = _int(spec.get("max_draft_len") or spec.get("num_nextn_predict_layers"))
    forced = rec.env.get("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS")
    if forced is not None:
        f.synthetic = True
        f.unit = "al-1"
        f.raw = f"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={forced}"
        f.raw_value = _float(forced)
        f.al = None if f.raw_value is None else f.raw_value + 1


def _atom(rec: Record, f: SpecFacts) -> None:
    method = _opt(rec.argv, "--method")
    k = _int(_opt(rec.argv, "--num-speculative-tokens"))
    if method is not None or k is not None:
        f.has_spec = True
        f.draft = _opt(rec.argv, "--draft-model")
        f.method = canonical_method("atom", method or "mtp", f.draft)
        f.k = k
    length = _opt(rec.argv, "--spec-decode-acceptance-length")
    rate = _opt(rec.argv, "--spec-decode-acceptance-rate")
    if length is not None and rate is not None:
        f.issues.append("--spec-decode-acceptance-length and --spec-decode-acceptance-rate "
                        "are mutually exclusive")
    if length is not None:
        f.synthetic = True
        f.raw = f"--spec-decode-acceptance-length {length}"
        f.raw_value = f.al = _float(length)
    elif rate is not None:
        f.synthetic = True
        f.unit = "rate"
        f.raw = f"--spec-decode-acceptance-rate {rate}"
        f.raw_value = _float(rate)
        if f.raw_value is not None and f.k:
            f.al = f.raw_value * f.k + 1
    dspark = _opt(rec.argv, "--dspark-config")
    if f.synthetic and dspark and re.search(r'"confidence_schedule"\s*:\s*true', dspark):
        f.issues.append("forced acceptance together with the DSpark confidence scheduler "
                        "(ATOM rejects this combination)")


def _thinking_env(env: dict[str, str], f: SpecFacts) -> None:
    for var in ("SGLANG_DEFAULT_THINKING", "SGLANG_ENABLE_THINKING", "DYN_DEFAULT_THINKING_MODE"):
        if var in env and (mode := _mode(env[var])):
            f.thinking_evidence.append((2, mode, f"{var}={env[var]}"))


def client_thinking(records: Sequence[Record]) -> tuple[str, str] | None:
    """Client-side per-request thinking flag (strongest evidence), e.g. AIPERF_EXTRA_INPUTS."""
    for rec in records:
        extra = rec.env.get("AIPERF_EXTRA_INPUTS")
        if extra:
            m = re.search(r"thinking(?:_mode)?[\"']?\s*[:=]\s*[\"']?"
                          r"(true|false|enabled|disabled)",
                          extra, re.IGNORECASE)
            if m and (mode := _mode(m.group(1))):
                return mode, f"AIPERF_EXTRA_INPUTS={extra}"
    return None


def decide_thinking(f: SpecFacts, records: Sequence[Record], template_default: str,
                    prefix: str) -> Thinking:
    client = client_thinking(records)
    if client:
        return Thinking(client[0], f"client: {client[1]}")
    if f.thinking_evidence:
        _, mode, why = sorted(f.thinking_evidence, key=lambda e: -e[0])[0]
        return Thinking(mode, f"server: {why}")
    if template_default == "on":
        return Thinking("thinking_on", f"the {prefix} chat template defaults to thinking")
    return Thinking(None, "no client thinking flag, no --default-chat-template-kwargs / "
                    "SGLANG_DEFAULT_THINKING / DYN_DEFAULT_THINKING_MODE / thinking chat "
                    f"template, and the {prefix} template default is {template_default}")
