"""Where a config finding points: a path of mapping keys is found by a line scan (no
round-trip load of the block: issue 35, the configs stage of ``ci gate``), the same line
and column the round-trip loader gives; anything else falls back to the loader."""

from __future__ import annotations

import pytest

from inferencex_tools.io.yamlio import load_rt, rt_path_position
from inferencex_tools.sweep.validate import _File

TEXT = """\
# header
other:
  scenarios:
    fixed-seq-len: []
dsr1-fp8-h200-sglang:
  # a comment first
  image: x
  scenarios:
    # two scenarios
    fixed-seq-len:
    - search-space:
      - {tp: 8, conc-start: 4, conc-end: 8}
    agentic-coding:
      - search-space: []
  runner: h200
'flow-key':
  scenarios: {fixed-seq-len: [], agentic-coding: []}
"""


@pytest.mark.parametrize(("path", "where"), [
    (("dsr1-fp8-h200-sglang",), (5, 1)),
    (("dsr1-fp8-h200-sglang", "runner"), (15, 3)),
    (("dsr1-fp8-h200-sglang", "scenarios", "fixed-seq-len"), (10, 5)),
    (("dsr1-fp8-h200-sglang", "scenarios", "agentic-coding"), (13, 5)),
    (("other", "scenarios", "fixed-seq-len"), (4, 5)),
])
def test_a_path_of_keys_is_found_by_its_lines_where_the_loader_finds_it(
        path: tuple[str, ...], where: tuple[int, int]) -> None:
    scanned = _File("c.yaml", TEXT.encode())
    assert scanned.position(path) == where
    assert not scanned.block_rt and not scanned.rt_loaded  # nothing was loaded
    rt = load_rt(TEXT.encode(), source="c.yaml")
    assert rt_path_position(rt, list(path)) == where  # the round-trip loader agrees


def test_flow_style_and_list_indices_fall_back_to_the_loader() -> None:
    f = _File("c.yaml", TEXT.encode())
    assert f._scan(("flow-key", "scenarios", "agentic-coding")) == (None, None)
    assert f.position(("flow-key", "scenarios", "agentic-coding"))[0] == 17
    path = ("dsr1-fp8-h200-sglang", "scenarios", "fixed-seq-len", 0, "search-space", 0)
    assert f._scan(path) == (None, None)
    assert f.position(path)[0] == 12
