"""runners.yaml as InferenceX kept it before 2026-07-02 (#1970): the labels mapping
itself, without ``labels:``/``hardware:`` sections (issue 25: every older PR's gate
lost its runner labels, and the policy check gave PO201 for every multi-node key)."""

from __future__ import annotations

import pytest

from inferencex_tools.errors import InputError
from inferencex_tools.sweep.load import parse_runners

FLAT = b"h100:\n- 'h100-cw_00'\n- 'h100-dgxc-slurm_00'\nb200-multinode:\n- b200-dgxc_0\n"


def test_the_flat_form_is_its_labels() -> None:
    r = parse_runners(FLAT, "runners.yaml")
    assert r.labels == {"h100": ["h100-cw_00", "h100-dgxc-slurm_00"],
                        "b200-multinode": ["b200-dgxc_0"]}
    assert r.hardware == {}


@pytest.mark.parametrize("raw", [b"h100: [a]\nhardware: {}\n", b"h100: []\n", b"h100: x\n",
                                 b"{}\n"])
def test_anything_else_without_labels_is_still_refused(raw: bytes) -> None:
    with pytest.raises(InputError):
        parse_runners(raw, "runners.yaml")


def test_the_history_before_the_move_has_its_labels(full_history: object) -> None:
    from pathlib import Path

    from tests.conftest import git

    root = Path(str(full_history))
    move = git(root, "log", "--first-parent", "--format=%H", "--grep=(#1970)",
               "main-upto-0715").split()[0]
    from inferencex_tools.io.gitcat import GitReader
    from inferencex_tools.io.layout import layout_at

    reader = GitReader(root)
    try:
        raw = reader.blob(f"{move}~1", layout_at(reader, f"{move}~1").runners)[0]
    finally:
        reader.close()
    assert raw is not None and b"\nlabels:" not in raw
    r = parse_runners(raw, "runners.yaml")
    assert len(r.labels) > 10 and all(r.labels.values())
