"""A config key that looks exactly like another through a visible non-ASCII character
(held-out variant of issue 27, item 8): ``minimаxm3-…`` with a Cyrillic ``а`` next to
the real key passed ``ci gate`` without a finding (SW107 sees only invisible characters)
and its sweep ran.  SW109 (error) names the code points; the real keys are ASCII."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.test_invisible_characters import KEY, _pr, _run

LOOK_ALIKES = {
    "Cyrillic a": "\u0430",  # а
    "Greek omicron": "\u03bf",  # ο
    "full-width m": "\uff4d",  # ｍ
    "Cyrillic dze": "\u0455",  # ѕ
    "non-breaking hyphen": "\u2011",  # ‑
}


@pytest.mark.parametrize("name", list(LOOK_ALIKES))
def test_a_look_alike_key_is_an_error(tmp_path: Path, corpus: Path, name: str) -> None:
    char = LOOK_ALIKES[name]
    twin = KEY[:4] + char + KEY[5:]  # one character replaced: the same length, the same look
    block = (f"{twin}:\n  image: lmsysorg/sglang:v0.5.2\n  model: x\n  model-prefix: dsr1\n"
             "  runner: h200\n  precision: fp8\n  framework: sglang\n  multinode: false\n"
             "  scenarios: {}\n")
    first = (corpus / "configs" / "nvidia-master.yaml").read_text().split("\n", 1)[0]
    base = _pr(tmp_path / "repo", corpus, key=twin,
               config_edit=(first + "\n", block + first + "\n"))
    rc, doc, _ = _run(tmp_path / "repo", "config", "validate", "--base", base)
    sw109 = [f for f in doc["findings"] if f["rule"] == "SW109"]
    assert rc == 1 and len(sw109) == 1 and sw109[0]["severity"] == "error", doc["findings"]
    assert f"U+{ord(char):04X}" in sw109[0]["hint"]
    rc, doc, _ = _run(tmp_path / "repo", "ci", "gate", "--base", base, "--pr", "7",
                      "--no-policy", "--priority", "none")
    assert rc == 1 and "SW109" in {f["rule"] for f in doc["findings"]
                                   if f["severity"] == "error"}, doc["findings"]


def test_real_keys_are_ascii(corpus: Path) -> None:
    from inferencex_tools.io.yamlio import load_safe

    for path in sorted((corpus / "configs").glob("*-master.yaml")):
        doc = load_safe(path.read_bytes(), source=str(path))
        assert all(k.isascii() for k in doc), path
