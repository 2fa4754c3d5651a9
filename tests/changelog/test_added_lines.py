"""Which lines a change adds to the changelog: one answer for every rule that judges
"the change's own lines" (the layout rules and the per-line rules of ``validate``).

A base without a final newline is the case where a byte-prefix test and a line diff
part ways: appending after it rewrites the base's last line's bytes (a newline is added)
but not its text, so that line stays history's.
"""

from __future__ import annotations

import pytest

from inferencex_tools.changelog.layout import line_changes
from inferencex_tools.changelog.validate import Options, analyze_change

U = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
# the base's last line has trailing whitespace (a history quirk, CL301) and no newline
BASE = (f"- config-keys:\n    - k1\n  pr-link: {U}10\n  description:\n"
        '    - "first"  ').encode()
ENTRY = (f'- config-keys:\n    - k2\n  description:\n    - "second" \n'
         f"  pr-link: {U}11\n").encode()


def test_appending_after_a_base_without_final_newline_adds_only_the_new_lines() -> None:
    head = BASE + b"\n\n" + ENTRY
    assert line_changes(BASE, head).added == set(range(6, 12))
    a = analyze_change(BASE, head, "perf-changelog.yaml",
                       Options(pr=11, master_keys=["k1", "k2"]))
    ws = sorted(f.line for f in a.findings if f.rule == "CL301" and f.line is not None)
    # the new entry's trailing space (head line 10) is the change's; the base's last
    # line (5), kept as it was, is history's
    assert ws == [10], a.findings


@pytest.mark.parametrize(("base", "head", "added"), [
    (b"a\nb", b"a\nb\nc\n", {3}),  # the newline added to b: b is still history's
    (b"a\nb", b"a\nb\nc", {3}),
    (b"a\nb", b"a\nB\nc\n", {2, 3}),  # b rewritten: the change's
    (b"a\nb\n", b"a\nb\nc\n", {3}),  # a plain append: no line after the final newline
    (b"a\nb\n", b"a\nb\nc", {3}),
    (b"", b"a\n", {1}),
    (b"a\nb\n", b"a\nb\n", set()),
])
def test_the_lines_a_change_adds(base: bytes, head: bytes, added: set[int]) -> None:
    assert line_changes(base, head).added == added
