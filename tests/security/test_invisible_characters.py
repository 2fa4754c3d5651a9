"""Invisible and bidirectional characters (issue 27, item 8): a zero-width space makes two
config keys look identical, a bidi override makes a description read differently from
what it is.  In master-config keys and changelog config-key references they are errors
(SW107, CL604); in text (descriptions, values, comments) warnings (CL304, SW108); the
hint names the code points; a source line shown in a terminal shows them as <U+XXXX>."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.safetext import code_points, invisible_chars, is_invisible
from tests.conftest import TempRepo, copy_corpus

# zero-width, joiners, bidi marks/embeddings/overrides/isolates, word joiner, BOM, soft
# hyphen, combining grapheme joiner, Mongolian vowel separator, variation selector, a tag
CHARS = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066",
         "\u2069", "\u061c", "\u2060", "\ufeff", "\u00ad", "\u034f", "\u180e", "\ufe0f",
         "\U000e0041", "\u3164", "\u2062"]
KEY = "dsr1-fp8-h200-sglang"
ENTRY = """- config-keys:
    - {key}
  description:
    - "{text}"
  pr-link: {link}
"""


def _run(cwd: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    p = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", *args, "--format",
                        "json"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode in (0, 1), p.stderr
    text = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300).stdout
    return p.returncode, json.loads(p.stdout), text


def _pr(path: Path, corpus: Path, key: str = KEY, text: str = "Re-run.",
        config_edit: tuple[str, str] | None = None) -> str:
    repo = TempRepo(path)
    copy_corpus(corpus, path)
    base = repo.commit("base")
    if config_edit is not None:
        cfg = path / "configs" / "nvidia-master.yaml"
        body = cfg.read_text()
        assert config_edit[0] in body
        cfg.write_text(body.replace(config_edit[0], config_edit[1], 1))
    with (path / "perf-changelog.yaml").open("a") as fh:
        fh.write("\n" + ENTRY.format(key=key, text=text, link="XXX"))
    repo.commit("PR")
    return base


@pytest.mark.parametrize("char", CHARS, ids=lambda c: f"U+{ord(c):04X}")
def test_every_invisible_character_is_recognised(char: str) -> None:
    assert is_invisible(char) and invisible_chars(f"a{char}b") == [(1, char)]
    assert f"U+{ord(char):04X}" in code_points(char)


@pytest.mark.parametrize("text", ["dsr1-fp8", "café", "Ünïcødé", "中文", "ß", "ﬁ", "—", "→",
                                  "é"])
def test_visible_text_is_not(text: str) -> None:
    assert invisible_chars(text) == []


def test_the_classification_is_unicodes() -> None:
    """Every format character (Cf) is invisible; no letter, digit or space is."""
    for o in range(0x110000):
        c = chr(o)
        cat = unicodedata.category(c)
        if cat == "Cf":
            assert is_invisible(c), hex(o)
        elif cat[0] in "LNPSZ" and o not in (0x3164, 0xFFA0, 0x115F, 0x1160):
            assert not is_invisible(c), hex(o)


@pytest.mark.parametrize("char", ["\u200b", "\u202e", "\u2066", "\ufeff", "\u00ad"],
                         ids=lambda c: f"U+{ord(c):04X}")
def test_master_config_key_is_an_error(tmp_path: Path, corpus: Path, char: str) -> None:
    """A second key that looks exactly like an existing one: SW107, through config
    validate --base and the gate's config stage, the hint naming the code point."""
    twin = KEY[:4] + char + KEY[4:]
    block = (f"{twin}:\n  image: lmsysorg/sglang:v0.5.2\n  model: x\n  model-prefix: dsr1\n"
             "  runner: h200\n  precision: fp8\n  framework: sglang\n  multinode: false\n"
             "  scenarios: {}\n")
    cfg = corpus / "configs" / "nvidia-master.yaml"
    first = cfg.read_text().split("\n", 1)[0]
    base = _pr(tmp_path / "repo", corpus, key=twin, config_edit=(first + "\n", block + first
                                                                 + "\n"))
    rc, doc, text = _run(tmp_path / "repo", "config", "validate", "--base", base)
    sw107 = [f for f in doc["findings"] if f["rule"] == "SW107"]
    assert rc == 1 and len(sw107) == 1, doc["findings"]
    assert sw107[0]["severity"] == "error" and sw107[0]["line"] == 1
    assert f"U+{ord(char):04X}" in sw107[0]["hint"] and repr(KEY) in sw107[0]["message"]
    assert char not in text and f"<U+{ord(char):04X}>" in text  # the terminal sees it
    rc, doc, _ = _run(tmp_path / "repo", "ci", "gate", "--base", base, "--pr", "7",
                      "--no-policy", "--priority", "none")
    rules = {f["rule"] for f in doc["findings"] if f["severity"] == "error"}
    assert rc == 1 and {"SW107", "CL604"} <= rules, doc["findings"]


def test_changelog_key_reference_is_an_error_and_prose_a_warning(tmp_path: Path,
                                                                 corpus: Path) -> None:
    base = _pr(tmp_path / "a", corpus, key=KEY[:4] + "\u200b" + KEY[4:])
    rc, doc, _ = _run(tmp_path / "a", "changelog", "validate", "--base", base, "--pr", "7")
    cl604 = [f for f in doc["findings"] if f["rule"] == "CL604"]
    assert rc == 1 and cl604 and cl604[0]["severity"] == "error"
    assert "U+200B ZERO WIDTH SPACE" in cl604[0]["hint"]
    base = _pr(tmp_path / "b", corpus, text="Reads \u202edesrever\u202c here.")
    rc, doc, text = _run(tmp_path / "b", "changelog", "validate", "--base", base, "--pr", "7")
    cl304 = [f for f in doc["findings"] if f["rule"] == "CL304"]
    assert rc == 0 and cl304 and cl304[0]["severity"] == "warning", doc["findings"]
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in cl304[0]["hint"]
    assert "\u202e" not in text
    rc, doc, _ = _run(tmp_path / "b", "ci", "gate", "--base", base, "--pr", "7",
                      "--no-policy", "--priority", "none")
    assert rc == 0 and "CL304" in {f["rule"] for f in doc["findings"]}


def test_master_config_text_is_a_warning(tmp_path: Path, corpus: Path) -> None:
    cfg = (corpus / "configs" / "nvidia-master.yaml").read_text()
    image = next(ln for ln in cfg.splitlines() if ln.startswith("  image: "))
    base = _pr(tmp_path / "repo", corpus,
               config_edit=(image + "\n", image + "  # pinned \u2067by ops\u2069\n"))
    rc, doc, _ = _run(tmp_path / "repo", "config", "validate", "--base", base)
    sw108 = [f for f in doc["findings"] if f["rule"] == "SW108"]
    assert rc == 0 and len(sw108) == 1 and sw108[0]["severity"] == "warning", doc["findings"]
    assert "U+2067 RIGHT-TO-LEFT ISOLATE" in sw108[0]["hint"]


def test_real_data_has_none(corpus: Path) -> None:
    """No false finding on the real master configs, runners.yaml and changelog."""
    _, doc, _ = _run(corpus, "config", "validate")
    assert not [f for f in doc["findings"] if f["rule"] in ("SW107", "SW108")]
    for p in corpus.rglob("*.yaml"):
        assert invisible_chars(p.read_text(encoding="utf-8")) == [], p
