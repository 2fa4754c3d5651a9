"""Fuzz harnesses shared by the pytest suite (short budget) and ``benchmarks/fuzz_long.py``.

The property every harness checks: each input ends in a *result* or a *clean ixtool
error* (an :class:`~inferencex_tools.errors.IxtoolError`; through the CLI, exit 1 or 2
with a message and no "internal error"), never another exception, a hang or
unbounded memory.  An input that breaks the property is an *escape*.

A harness is a target function plus a hypothesis strategy producing its argument
tuple.  Strategies are structure-aware: they start from seeds (the committed
``tests/fuzz/corpus/`` plus fragments cut from the real shared corpus at run time)
and from generated changelog entries, then apply byte-level YAML-aware mutations.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import tempfile
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from hypothesis import strategies as st

from inferencex_tools.errors import IxtoolError

HERE = Path(__file__).resolve().parent
CORPUS_DIR = HERE / "corpus"
ROOT = HERE.parent.parent
SHARED = Path(os.environ.get("IXTOOL_SHARED", ROOT.parent / "shared"))
SHARED_CORPUS = SHARED / "corpus" / "inferencex"

REPO = "SemiAnalysisAI/InferenceX"
PER_INPUT_SECONDS = 20.0  # an input taking longer than this is reported as a hang


# --------------------------------------------------------------------------- outcomes

class Hang(BaseException):
    """Raised by the alarm when one input runs past PER_INPUT_SECONDS."""


class Escape(AssertionError):
    """An input broke the property; carries the exception and the input."""


@dataclass
class Outcome:
    kind: str  # "result" | "clean-error" | "escape"
    detail: str = ""


@contextlib.contextmanager
def time_guard(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` in the main thread after ``seconds`` (SIGALRM)."""
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def _alarm(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"input ran longer than {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_one(target: Callable[..., object], args: tuple[Any, ...],
            seconds: float = PER_INPUT_SECONDS) -> Outcome:
    """Run one input and classify it (never raises, except KeyboardInterrupt)."""
    try:
        with time_guard(seconds):
            target(*args)
    except IxtoolError as exc:
        if not str(exc.message).strip():
            return Outcome("escape", f"{type(exc).__name__} with an empty message")
        return Outcome("clean-error", type(exc).__name__)
    except KeyboardInterrupt:
        raise
    except Hang as exc:
        return Outcome("escape", f"hang: {exc}")
    except BaseException as exc:  # the property: nothing else may escape
        tb = "".join(traceback.format_exception(exc)[-6:])
        return Outcome("escape", f"{type(exc).__name__}: {exc}\n{tb}")
    return Outcome("result")


def check(target: Callable[..., object], *args: Any) -> Outcome:
    """pytest helper: run one input, fail the test on an escape."""
    out = run_one(target, args)
    if out.kind == "escape":
        shown = repr(args)[:600]
        raise Escape(f"escape from {getattr(target, '__name__', target)}: {out.detail}\n"
                     f"input: {shown}")
    return out


# ------------------------------------------------------------------------------ seeds

def _cut_entries(raw: bytes, starts: list[int], first: int, count: int) -> bytes:
    lo = starts[first]
    hi = starts[first + count] if first + count < len(starts) else len(raw)
    return raw[lo:hi]


def shared_seeds() -> list[bytes]:
    """Small fragments of the real corpus (cut at run time, never committed)."""
    out: list[bytes] = []
    cl = SHARED_CORPUS / "perf-changelog.yaml"
    if cl.is_file():
        raw = cl.read_bytes()
        starts = [i for i in range(len(raw)) if raw.startswith(b"- config-keys:", i)
                  and (i == 0 or raw[i - 1:i] == b"\n")]
        if len(starts) > 10:
            n = len(starts)
            for first, count in ((0, 3), (n // 3, 2), (n // 2, 4), (n - 3, 3), (n - 1, 1)):
                out.append(_cut_entries(raw, starts, first, count))
    cfg = SHARED_CORPUS / "configs"
    for name in ("amd-master.yaml", "nvidia-master.yaml", "runners.yaml", "ci-priority.yaml"):
        p = cfg / name
        if p.is_file():
            lines = p.read_bytes().split(b"\n")
            # the first top-level blocks: up to ~120 lines, cut at a top-level key
            cut = 120
            for i in range(120, min(len(lines), 400)):
                if lines[i][:1].isalpha():
                    cut = i
                    break
            out.append(b"\n".join(lines[:cut]) + b"\n")
    return out


def committed_seeds() -> list[bytes]:
    if not CORPUS_DIR.is_dir():
        return []
    return [p.read_bytes() for p in sorted(CORPUS_DIR.iterdir()) if p.is_file()
            and p.suffix in (".yaml", ".yml", ".json", ".bin")]


_SEEDS: list[bytes] | None = None


def seeds() -> list[bytes]:
    global _SEEDS
    if _SEEDS is None:
        found = committed_seeds() + shared_seeds()
        _SEEDS = found or [b"- config-keys:\n  - a\n  description:\n  - b\n  pr-link: XXX\n"]
    return _SEEDS


# -------------------------------------------------------------------------- mutations

TOKENS: tuple[bytes, ...] = (
    b"- ", b": ", b"\n", b"  ", b"    ", b"[", b"]", b"{", b"}", b", ", b"&a ", b"*a", b"&b ",
    b"*b", b"<<: *a\n", b"!!str ", b"!!int ", b"!!float ", b"!!bool ", b"!!binary ", b"!!null ",
    b"!!timestamp ", b"!!set ", b"!!omap ", b"!!pairs ", b"!!map ", b"!!seq ", b"!foo ",
    b"!!python/object:os.system ", b"? ", b"|\n", b">-\n", b"'", b"\"", b"# c\n", b"---\n",
    b"...\n", b"%YAML 1.1\n---\n", b"%TAG ! tag:x,2000:\n---\n", b"\t", b"\r", b"\r\n", b"\0",
    b"\xff", b"\xe9", b"\xef\xbb\xbf", b"\xe2\x80\xa8", b"\xc2\x85", b"<<<<<<< HEAD\n",
    b"=======\n", b">>>>>>> main\n", b"- config-keys:\n", b"  - dsr1-fp8-*\n",
    b"  description:\n  - x\n", b"  pr-link: XXX\n", b"  pr-link: TBD\n",
    b"  pr-link:\n    https://github.com/SemiAnalysisAI/InferenceX/pull/12\n",
    b"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n",
    b"  evals-only: true\n", b"  append-only: yes\n", b"  eval-min-prefill-ep: 4\n",
    b"  pr_link: XXX\n", b"  isl: '1024'\n", b"  isl: 1024\n", b"  tp: -3\n", b"++", b"--",
    b"TEMP", b"DO NOT MERGE", b"9" * 40, b"1e999", b".nan", b"~", b"null", b"-0x1F",
    b"2001-13-45", b"0o17", b"1:20:30", b"\\", b"%", b"@", b"`", b"|", b">",
)


def mutate(data: bytes, ops: list[tuple[int, int, int, int]], others: list[bytes]) -> bytes:
    """Apply byte-level mutations. Each op is (kind, a, b, c) with free integers."""
    buf = bytearray(data)
    for kind, a, b, c in ops:
        n = len(buf)
        pos = a % (n + 1)
        k = kind % 10
        if k <= 2:  # insert a YAML token (most useful)
            buf[pos:pos] = TOKENS[b % len(TOKENS)]
        elif k == 3 and n:  # delete a span
            buf[pos:pos + 1 + b % 64] = b""
        elif k == 4 and n:  # duplicate a span
            span = bytes(buf[pos:pos + 1 + b % 256])
            buf[pos:pos] = span * (1 + c % 3)
        elif k == 5 and n:  # overwrite one byte
            buf[pos % n] = b % 256
        elif k == 6:  # truncate
            del buf[pos:]
        elif k == 7 and others:  # splice with another seed at line boundaries
            other = others[b % len(others)]
            cut = other.find(b"\n", c % (len(other) + 1))
            nl = buf.find(b"\n", pos)
            head = bytes(buf[: nl + 1]) if nl >= 0 else bytes(buf)
            buf = bytearray(head + (other[cut + 1:] if cut >= 0 else other))
        elif k == 8 and n:  # swap two lines
            lines = bytes(buf).split(b"\n")
            i, j = a % len(lines), b % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
            buf = bytearray(b"\n".join(lines))
        elif k == 9 and n:  # re-indent a line by a few spaces
            start = buf.rfind(b"\n", 0, pos) + 1
            buf[start:start] = b" " * (1 + b % 4)
        if len(buf) > 256 * 1024:  # keep inputs small; limits have their own tests
            del buf[256 * 1024:]
    return bytes(buf)


_ops = st.lists(
    st.tuples(st.integers(0, 9), st.integers(0, 1 << 20), st.integers(0, 1 << 16),
              st.integers(0, 255)),
    max_size=8,
)


@st.composite
def mutated_seed(draw: st.DrawFn) -> bytes:
    pool = seeds()
    base = pool[draw(st.integers(0, len(pool) - 1))]
    return mutate(base, draw(_ops), pool)


# ------------------------------------------------------- structure-aware generation

_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30
)
_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(allow_nan=True),
    _text, st.sampled_from(["XXX", "TBD", "dsr1-fp8-*", "a*b", "?", "[x]", "TEMP", "yes", "no",
                            "0x10", "1_000", "~", "", " ", "2001-01-01"]),
)
_value = st.recursive(
    _scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
_link = st.one_of(
    st.sampled_from(["XXX", "TBD", "", "https://github.com/SemiAnalysisAI/InferenceX/pull/XXX",
                     "https://github.com/SemiAnalysisAI/InferenceX/pull/77",
                     "https://github.com/SemiAnalysisAI/InferenceX/pull/77/files",
                     "https://github.com/InferenceMAX/InferenceMAX/pull/3",
                     "https://github.com/other/repo/pull/77", "http://github.com/x/y/pulls/0"]),
    _text,
)
_KEYS = ("config-keys", "description", "pr-link", "evals-only", "all-evals", "append-only",
         "eval-min-prefill-ep", "scenario-type", "pr_link", "extra")


@st.composite
def entry(draw: st.DrawFn) -> dict[str, Any]:
    """A changelog entry: mostly well-typed, sometimes not."""
    e: dict[str, Any] = {
        "config-keys": draw(st.one_of(
            st.lists(st.sampled_from(["dsr1-fp8-b200-sglang", "dsr1-fp8-*", "*", "gptoss-*-mi355x",
                                      "nope-key", "a?b", "[x]"]), min_size=0, max_size=3),
            _value)),
        "description": draw(st.one_of(st.lists(_text, min_size=1, max_size=2), _value)),
        "pr-link": draw(st.one_of(_link, _value)),
    }
    for k in draw(st.lists(st.sampled_from(_KEYS[3:]), max_size=2, unique=True)):
        e[k] = draw(st.one_of(st.booleans(), _value))
    if draw(st.integers(0, 9)) == 0:
        e.pop(draw(st.sampled_from(["config-keys", "description", "pr-link"])))
    return e


def _scalar_text(v: Any) -> str:
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    return json.dumps(v, allow_nan=True).replace("NaN", ".nan").replace("Infinity", ".inf")


def render_entry(e: dict[str, Any]) -> str:
    """The canonical block layout (``- config-keys:`` first, two-space indent)."""
    lines: list[str] = []
    for i, (k, v) in enumerate(e.items()):
        lead = "- " if i == 0 else "  "
        if isinstance(v, list) and all(not isinstance(x, list | dict) for x in v) and v:
            lines.append(f"{lead}{k}:")
            lines.extend(f"  - {_scalar_text(x)}" for x in v)
        elif k == "pr-link" and isinstance(v, str) and v and "\n" not in v and v.isprintable() \
                and not v.startswith((" ", "'", '"', "[", "{", "&", "*", "!", "%", "@", "`")) \
                and ": " not in v and " #" not in v and not v.endswith((" ", ":")):
            lines.append(f"{lead}{k}: {v}")
        else:
            lines.append(f"{lead}{k}: {_scalar_text(v)}")
    if not e:
        lines.append("- {}")
    return "\n".join(lines) + "\n"


@st.composite
def changelog_text(draw: st.DrawFn, min_entries: int = 0) -> bytes:
    entries = draw(st.lists(entry(), min_size=min_entries, max_size=5))
    return "\n".join(render_entry(e) for e in entries).encode()


@st.composite
def changelog_bytes(draw: st.DrawFn) -> bytes:
    """Generated, seeded or raw bytes, then (usually) mutated."""
    pool = seeds()
    src = draw(st.integers(0, 5))
    if src <= 1:
        data = draw(changelog_text())
    elif src <= 4:
        data = pool[draw(st.integers(0, len(pool) - 1))]
    else:
        data = draw(st.binary(max_size=512))
    return mutate(data, draw(_ops), pool)


@st.composite
def change_pair(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """(base, head): head appends/edits/inserts entries; either side may be mutated."""
    pool = seeds()
    if draw(st.booleans()):
        base = draw(changelog_text(min_entries=1))
    else:
        base = pool[draw(st.integers(0, len(pool) - 1))]
    extra = draw(changelog_text(min_entries=1)) if draw(st.integers(0, 3)) else b""
    how = draw(st.integers(0, 5))
    if how <= 2:  # append (the normal case), with a random separator
        sep = draw(st.sampled_from([b"\n", b"", b"\n\n", b"\n \n", b"\r\n"]))
        head = base + sep + extra
    elif how == 3:  # insert at the front
        head = extra + b"\n" + base
    elif how == 4:  # link correction / edit of history
        head = base.replace(b"pr-link: XXX", b"pr-link: https://github.com/"
                            + REPO.encode() + b"/pull/9", 1)
    else:
        head = base
    if draw(st.integers(0, 2)) == 0:
        head = mutate(head, draw(_ops), pool)
    if draw(st.integers(0, 5)) == 0:
        base = mutate(base, draw(_ops), pool)
    return base, head


_plain = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF,
                                        exclude_characters='"\\'), min_size=1, max_size=40)


@st.composite
def valid_entry(draw: st.DrawFn, link: str | None = None) -> bytes:
    """A well-formed entry block (so the merge surgery gets past its gate)."""
    keys = draw(st.lists(st.sampled_from(["dsr1-fp8-b200-sglang", "gptoss-fp4-mi355x-vllm",
                                          "dsr1-*"]), min_size=1, max_size=2, unique=True))
    descs = draw(st.lists(_plain, min_size=1, max_size=2))
    if link is None:
        link = f"https://github.com/{REPO}/pull/{draw(st.integers(1, 9999))}"
    out = "- config-keys:\n" + "".join(f"  - {k}\n" for k in keys) + "  description:\n"
    out += "".join(f'  - "{d}"\n' for d in descs)
    extra = draw(st.sampled_from(["", "  evals-only: true\n", "  append-only: true\n"]))
    return (out + f"  pr-link: {link}\n" + extra).encode()


@st.composite
def merge_pair(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """(base, head) shaped like a real PR: history + appended placeholder entries."""
    base = b"\n".join(draw(st.lists(valid_entry(), min_size=1, max_size=4)))
    link = draw(st.sampled_from(["XXX", f"https://github.com/{REPO}/pull/XXX",
                                 f"https://github.com/{REPO}/pull/17"]))
    new = b"\n".join(draw(st.lists(valid_entry(link=link), min_size=1, max_size=2)))
    head = base + b"\n" + new
    if draw(st.integers(0, 3)) == 0:  # a pr-link correction instead of an append
        head = base.replace(b"/pull/", b"/pull/1", 1)
    if draw(st.integers(0, 2)) == 0:
        head = mutate(head, draw(_ops), seeds())
    return base, head


_opts = st.builds(
    dict,
    pr=st.one_of(st.none(), st.integers(1, 5000)),
    master_keys=st.one_of(st.none(), st.just(["dsr1-fp8-b200-sglang", "gptoss-fp4-mi355x-vllm",
                                              "a*b"])),
    repo=st.sampled_from([REPO, "other/repo", "a.b/c-d"]),
)


# -------------------------------------------------------------------------- targets

def t_yaml_safe(data: bytes) -> object:
    from inferencex_tools.io.yamlio import load_safe

    return load_safe(data, source="fuzz.yaml")


def t_yaml_rt(data: bytes) -> object:
    from inferencex_tools.io.yamlio import load_rt

    return load_rt(data, source="fuzz.yaml")


def t_changelog_parse(data: bytes) -> object:
    from inferencex_tools.changelog.model import parse

    cl = parse(data, "perf-changelog.yaml")
    for e in cl.entries:  # exercise the helpers the rules use
        e.describe()
        cl.block(e)
        cl.link_line(e)
    return cl


def t_changelog_standalone(data: bytes, opts: dict[str, Any]) -> object:
    from inferencex_tools.changelog.validate import Options, validate_standalone

    cl = validate_standalone(data, "perf-changelog.yaml", Options(repo=opts["repo"]))
    _render(cl.findings)
    return cl


def t_changelog_change(pair: tuple[bytes, bytes], opts: dict[str, Any]) -> object:
    from inferencex_tools.changelog.validate import Options, analyze_change

    a = analyze_change(pair[0], pair[1], "perf-changelog.yaml", Options(**opts),
                       base_label="perf-changelog.yaml@base")
    _render(a.findings)
    return a


def t_changelog_fix(pair: tuple[bytes, bytes], opts: dict[str, Any]) -> object:
    """analyze → fix → re-analyze; a fix must never alter the base bytes (history)."""
    from inferencex_tools.changelog.fix import fix_change
    from inferencex_tools.changelog.validate import Options, analyze_change

    o = Options(**opts)
    a = analyze_change(pair[0], pair[1], "perf-changelog.yaml", o)
    out = fix_change(a, o)
    if out.data is not None:
        if not out.data.startswith(a.base.raw):
            raise AssertionError("fix_change rewrote historical bytes")
        analyze_change(pair[0], out.data, "perf-changelog.yaml", o)
    return out


def t_canonicalize(pair: tuple[bytes, bytes], opts: dict[str, Any]) -> object:
    from inferencex_tools.changelog.merge_ops import canonicalize

    out = canonicalize(pair[0], pair[1], pr=opts["pr"] or 1, repo=opts["repo"])
    if out.changed and not out.data.startswith(pair[0]):
        raise AssertionError("canonicalize rewrote historical bytes")
    return out


def t_resolve(triple: tuple[bytes, bytes, bytes], opts: dict[str, Any]) -> object:
    from inferencex_tools.changelog.merge_ops import resolve_conflict

    out = resolve_conflict(triple[0], triple[1], triple[2], pr=opts["pr"] or 1,
                           repo=opts["repo"])
    main = triple[2]
    if not out.data.startswith(main):  # only a pr-link correction may edit main's lines
        a, b = main.split(b"\n"), out.data.split(b"\n")
        if len(a) != len(b) or any(x != y and not (x.startswith(b"  pr-link:")
                                                    and y.startswith(b"  pr-link:"))
                                   for x, y in zip(a, b, strict=True)):
            raise AssertionError("resolve_conflict changed main's bytes beyond pr-link lines")
    return out


def _render(findings: list[Any]) -> None:
    """Every finding must render in every output format."""
    from inferencex_tools.report.findings import Result
    from inferencex_tools.report.reporters import render, render_markdown_summary

    r = Result(command="fuzz")
    r.extend(findings)
    for fmt in ("text", "json", "github", "sarif"):
        render(r, fmt, color=False)
    render_markdown_summary(r)


@contextlib.contextmanager
def _no_github_env() -> Iterator[None]:
    """Hide $GITHUB_* while the CLI runs in-process (no event, output or summary files
    of a real workflow may be read or appended to by fuzz inputs)."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("GITHUB_")}
    for k in saved:
        del os.environ[k]
    try:
        yield
    finally:
        os.environ.update(saved)


def t_cli_validate(data: bytes, args: list[str]) -> object:
    """``ixtool changelog validate FILE`` in-process: exit 0/1/2 and no internal error."""
    from inferencex_tools.cli.main import run

    with tempfile.TemporaryDirectory(prefix="ixfuzz-") as d:
        p = Path(d) / "perf-changelog.yaml"
        p.write_bytes(data)
        out, err = io.StringIO(), io.StringIO()
        code: object = 0
        try:
            with _no_github_env(), contextlib.redirect_stdout(out), \
                    contextlib.redirect_stderr(err):
                run(["changelog", "validate", str(p), "--repo", REPO, *args])
        except SystemExit as exc:
            code = exc.code
    text = err.getvalue()
    if code not in (0, 1, 2, None) or "internal error" in text or "Traceback" in text:
        raise AssertionError(f"CLI exit {code!r}: {text[-800:]}")
    if code == 2 and "ixtool: error:" not in text and "Usage" not in text:
        raise AssertionError(f"exit 2 without a message: {text[-400:]}")
    return code


# ------------------------------------------------------------- sweep / master configs

_FALLBACK_MASTER: dict[str, Any] = {
    "dsr1-fp8-b200-sglang": {
        "image": "lmsysorg/sglang:v0.5", "model": "deepseek-ai/DeepSeek-R1",
        "model-prefix": "dsr1", "runner": "b200", "precision": "fp8", "framework": "sglang",
        "multinode": False,
        "scenarios": {"fixed-seq-len": [{"isl": 1024, "osl": 1024, "search-space": [
            {"tp": 8, "conc-start": 4, "conc-end": 64}]}]},
    },
}
_FALLBACK_RUNNERS = b"labels:\n  b200:\n  - b200-nv_0\n  mi355x:\n  - mi355x-amd_0\n"

_MASTER_TEMPLATES: list[dict[str, Any]] | None = None
_RUNNERS: Any = None


def master_templates() -> list[dict[str, Any]]:
    """Single-key master configs of every distinct shape found in the real corpus."""
    global _MASTER_TEMPLATES
    if _MASTER_TEMPLATES is None:
        from inferencex_tools.io.yamlio import load_safe

        out: list[dict[str, Any]] = []
        shapes: set[str] = set()
        for name in ("nvidia-master.yaml", "amd-master.yaml"):
            p = SHARED_CORPUS / "configs" / name
            if not p.is_file():
                continue
            data = load_safe(p.read_bytes(), source=name)
            for key, cfg in data.items():
                if not isinstance(cfg, dict):
                    continue
                scen = cfg.get("scenarios") or {}
                shape = json.dumps([cfg.get("multinode"), sorted(scen),
                                    sorted({k for v in scen.values() if isinstance(v, list)
                                            for x in v if isinstance(x, dict) for k in x})])
                if shape not in shapes and len(out) < 24:
                    shapes.add(shape)
                    out.append({key: cfg})
        _MASTER_TEMPLATES = out or [_FALLBACK_MASTER]
    return _MASTER_TEMPLATES


def runners() -> Any:
    global _RUNNERS
    if _RUNNERS is None:
        from inferencex_tools.sweep.load import parse_runners

        p = SHARED_CORPUS / "configs" / "runners.yaml"
        raw = p.read_bytes() if p.is_file() else _FALLBACK_RUNNERS
        _RUNNERS = parse_runners(raw, "runners.yaml")
    return _RUNNERS


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


_NASTY = st.one_of(
    _value, st.sampled_from(["1024", "8k", "", "-1", "0", "1e3", "NaN", "true", "null"]),
    st.sampled_from([0, -1, -3, 1, 2**31, 2**63, 10**30, 1.5, True, False, None, [], {}]),
)


@st.composite
def perturbed_master(draw: st.DrawFn) -> bytes:
    """A real (or fallback) master config with a few values/keys perturbed."""
    import copy

    pool = master_templates()
    picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=3))
    doc: dict[str, Any] = {}
    for i in picks:
        doc.update(copy.deepcopy(pool[i]))
    for _ in range(draw(st.integers(0, 4))):
        paths = _paths(doc)
        path = paths[draw(st.integers(0, len(paths) - 1))]
        if not path:
            continue
        parent: Any = doc
        for part in path[:-1]:
            parent = parent[part]
        op = draw(st.integers(0, 4))
        if op <= 2:
            parent[path[-1]] = draw(_NASTY)
        elif op == 3 and isinstance(parent, dict):
            del parent[path[-1]]
        elif op == 3 and isinstance(parent, list):
            parent.pop(path[-1])
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "isl", "tp", "ep", "conc-list", "dp-attn",
                                         "spec-decoding", "prefill", "decode"]))] = draw(_NASTY)
    text = json.dumps(doc, allow_nan=True).replace("NaN", ".nan").replace("Infinity", ".inf")
    data = text.encode()
    if draw(st.integers(0, 4)) == 0:
        data = mutate(data, draw(_ops), seeds())
    return data


def _opt(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), s)


_sweep_request = st.fixed_dictionaries({
    "mode": st.sampled_from(["full", "full", "test", "bogus"]),
    "config_keys": _opt(st.lists(st.sampled_from(["*", "dsr1-*", "nope", "?", "[a-z]*"]),
                                 max_size=2)),
    "seq_lens": _opt(st.lists(st.sampled_from(["1k1k", "8k1k", "2k2k"]), max_size=2)),
    "step_size": st.sampled_from([2, 2, 3, 1, 0, -2]),
    "min_conc": _opt(st.integers(-4, 512)),
    "max_conc": _opt(st.integers(-4, 512)),
    "max_tp": _opt(st.integers(-1, 16)),
    "max_ep": _opt(st.integers(-1, 16)),
    "single_node": st.booleans(),
    "multi_node": st.booleans(),
    "scenario_types": st.lists(st.sampled_from(["fixed-seq-len", "agentic-coding", "bogus"]),
                               min_size=1, max_size=2),
    "conc": _opt(st.lists(st.integers(-2, 1024), max_size=3)),
    "no_evals": st.booleans(),
    "evals_only": st.booleans(),
    "all_evals": st.booleans(),
    "runner_node_filter": _opt(st.sampled_from(["b200", "nv_0", "", "*"])),
})


def t_sweep_generate(raw: bytes, req: dict[str, Any]) -> object:
    """load → validate (as the CLI does before generating) → generate → serialise."""
    from inferencex_tools.sweep.generate import SweepRequest, dumps, generate_matrix
    from inferencex_tools.sweep.load import clear_cache, merge_masters
    from inferencex_tools.sweep.service import validate_for_generation

    clear_cache()
    configs = merge_masters([("fuzz-master.yaml", raw)])
    validate_for_generation(configs)
    m = generate_matrix(configs, runners(), SweepRequest(**req))
    dumps(m.rows)
    return m


def t_config_validate(raw: bytes) -> object:
    from inferencex_tools.sweep.load import clear_cache
    from inferencex_tools.sweep.validate import MasterFile, ValidateInput, validate

    clear_cache()
    r = runners()
    res = validate(ValidateInput(masters=[MasterFile("fuzz-master.yaml", raw)],
                                 runners=MasterFile("runners.yaml", r.raw),
                                 exists=lambda path: "missing" not in path))
    _render(res.findings)
    return res


# ----------------------------------------------------------------- CI event payloads

_sha_s = st.one_of(st.sampled_from(["a" * 40, "0" * 40, "b" * 40, "c" * 40]),
                   st.sampled_from(["abc", "", "--upload-pack=x", "HEAD", "a" * 64]), _value)
_label = st.one_of(st.fixed_dictionaries({"name": st.one_of(
    st.sampled_from(["sweep-enabled", "full-sweep", "evals-only", "agentx-fast", "skip",
                     "run-sweep", "x"]), _value)}), _value)


@st.composite
def event_payload(draw: st.DrawFn) -> tuple[str, Any]:
    name = draw(st.sampled_from(["pull_request"] * 4 + ["push"] * 2 + ["merge_group"] * 2
                                + ["workflow_dispatch", "pull_request_target", ""]))
    pr = {
        "number": draw(st.one_of(st.integers(1, 10**6), st.integers(-1, 10**6), _value)),
        "draft": draw(st.one_of(st.booleans(), _value)),
        "labels": draw(st.one_of(st.lists(_label, max_size=4), _value)),
        "head": {"sha": draw(_sha_s), "ref": draw(_text),
                 "repo": {"full_name": draw(st.sampled_from(["o/r", "fork/r", ""])),
                          "fork": draw(st.one_of(st.booleans(), _value))}},
        "base": {"sha": draw(_sha_s), "ref": draw(st.sampled_from(["main", "", "dev"]))},
        "title": draw(_text),
    }
    payload: dict[str, Any] = {
        "action": draw(st.one_of(st.sampled_from(["opened", "synchronize", "labeled",
                                                   "unlabeled", "reopened",
                                                   "ready_for_review", "closed", "checks"]),
                                 _value)),
        "pull_request": pr,
        "label": draw(_label),
        "repository": {"default_branch": draw(st.one_of(st.just("main"), _value))},
        "ref": draw(st.one_of(st.just("refs/heads/main"), _text)),
        "before": draw(_sha_s), "after": draw(_sha_s),
        "head_commit": {"message": draw(st.one_of(_text, st.just("[skip-sweep] x"), _value))},
        "merge_group": {"head_ref": draw(st.one_of(
            st.just("refs/heads/gh-readonly-queue/main/pr-12-abc"), _text, _value)),
            "base_sha": draw(_sha_s), "head_sha": draw(_sha_s)},
    }
    # knock out or replace a few fields wholesale
    knock = draw(st.lists(st.sampled_from(sorted(payload)), max_size=3, unique=True))
    for k in knock if draw(st.integers(0, 2)) == 0 else []:
        if draw(st.booleans()):
            del payload[k]
        else:
            payload[k] = draw(_value)
    if draw(st.integers(0, 19)) == 0:
        return name, draw(_value)
    return name, payload


_comments = st.lists(st.fixed_dictionaries({
    "body": st.one_of(st.sampled_from(["/reuse-sweep-run", "/reuse-sweep-run 123",
                                       "/reuse-sweep-run\n123", "/reuse-sweep-run abc", ""]),
                      _text, _value),
    "created_at": st.one_of(st.sampled_from(["2026-01-01T00:00:00Z", "yesterday", ""]), _value),
    "author_association": st.one_of(st.sampled_from(["MEMBER", "OWNER", "NONE"]), _value),
    "user": st.one_of(st.fixed_dictionaries({"login": _text}), _value),
}), max_size=4)


def t_ci_plan(event: tuple[str, Any], comments: Any) -> object:
    """payload → facts → decision (pure part of ``ixtool ci plan``) → outputs."""
    from inferencex_tools.ci.authorization import find_authorization
    from inferencex_tools.ci.event import facts_from_payload
    from inferencex_tools.ci.labels import decide
    from inferencex_tools.ci.outputs import output_pairs
    from inferencex_tools.io.actions import format_outputs

    with contextlib.suppress(IxtoolError):  # a bad comments file is its own input
        find_authorization(comments)
    facts = facts_from_payload(event[0], event[1])
    d = decide(facts)
    format_outputs(output_pairs(d), delimiter="ghadelimiter_fuzz")
    json.dumps(d.to_dict())
    return d


def t_cli_ci_plan(event: tuple[str, Any]) -> object:
    """``ixtool ci plan --event FILE --event-name NAME`` in-process, no git."""
    from inferencex_tools.cli.main import run

    with tempfile.TemporaryDirectory(prefix="ixfuzz-") as d:
        p = Path(d) / "event.json"
        p.write_text(json.dumps(event[1], allow_nan=True), encoding="utf-8")
        err = io.StringIO()
        code: object = 0
        try:
            with _no_github_env(), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(err):
                run(["ci", "plan", "--event", str(p), "--event-name", event[0] or "push",
                     "--no-git"])
        except SystemExit as exc:
            code = exc.code
    text = err.getvalue()
    if code not in (0, 1, 2, None) or "internal error" in text or "Traceback" in text:
        raise AssertionError(f"CLI exit {code!r}: {text[-800:]}")
    return code


# ------------------------------------------------------------------------- registry

@dataclass(frozen=True)
class Harness:
    name: str
    target: Callable[..., object]
    strategy: st.SearchStrategy[tuple[Any, ...]]
    needs: str | None = None  # module that must be importable (area landed)


@st.composite
def _triple(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    mb, ours = draw(merge_pair() if draw(st.integers(0, 2)) else change_pair())
    theirs_extra = (draw(valid_entry()) if draw(st.booleans())
                    else draw(changelog_text(min_entries=1)))
    theirs = mb + b"\n" + theirs_extra if draw(st.integers(0, 3)) else mb
    if draw(st.integers(0, 4)) == 0:
        theirs = mutate(theirs, draw(_ops), seeds())
    return mb, ours, theirs


_cli_args = st.sampled_from([[], ["--format", "json"], ["--format", "sarif"],
                             ["--format", "github"], ["--strict"]])

HARNESSES: tuple[Harness, ...] = (
    Harness("yaml_safe", t_yaml_safe, st.tuples(changelog_bytes())),
    Harness("yaml_rt", t_yaml_rt, st.tuples(changelog_bytes())),
    Harness("changelog_parse", t_changelog_parse, st.tuples(changelog_bytes())),
    Harness("changelog_standalone", t_changelog_standalone,
            st.tuples(changelog_bytes(), _opts)),
    Harness("changelog_change", t_changelog_change, st.tuples(change_pair(), _opts)),
    Harness("changelog_fix", t_changelog_fix,
            st.tuples(st.one_of(change_pair(), merge_pair()), _opts)),
    Harness("changelog_canonicalize", t_canonicalize,
            st.tuples(st.one_of(merge_pair(), change_pair()), _opts),
            needs="inferencex_tools.changelog.merge_ops"),
    Harness("changelog_resolve", t_resolve, st.tuples(_triple(), _opts),
            needs="inferencex_tools.changelog.merge_ops"),
    Harness("cli_changelog_validate", t_cli_validate, st.tuples(changelog_bytes(), _cli_args)),
    Harness("sweep_generate", t_sweep_generate, st.tuples(perturbed_master(), _sweep_request),
            needs="inferencex_tools.sweep.generate"),
    Harness("config_validate", t_config_validate, st.tuples(perturbed_master()),
            needs="inferencex_tools.sweep.validate"),
    Harness("ci_plan", t_ci_plan, st.tuples(event_payload(), _comments),
            needs="inferencex_tools.ci.event"),
    Harness("cli_ci_plan", t_cli_ci_plan, st.tuples(event_payload()),
            needs="inferencex_tools.ci.service"),
)


def available(h: Harness) -> bool:
    if h.needs is None:
        return True
    import importlib.util

    try:
        return importlib.util.find_spec(h.needs) is not None
    except ModuleNotFoundError:
        return False
