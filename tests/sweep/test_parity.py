"""Parity with the reference generator over every invocation of the oracle.

The reference argv is passed verbatim after ``ixtool sweep`` (in-process); the
stdout must equal the recorded stdout byte for byte (parsed JSON and the exact
serialisation).  Error cases must exit non-zero with a one-line message and no
traceback.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest

from inferencex_tools.cli.main import run
from tests.conftest import ORACLE

SWEEP_ORACLE = ORACLE / "sweep"


def _cases() -> list[tuple[str, int, str, list[str]]]:
    tsv = SWEEP_ORACLE / "invocations.tsv"
    if not tsv.is_file():
        return []
    out = []
    for line in tsv.read_text().splitlines()[1:]:
        name, rc, n, argv = line.split("\t")
        out.append((name, int(rc), n, argv.split(" ")))
    return out


CASES = _cases()


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        run(["sweep", *argv])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_oracle_present() -> None:
    if not CASES:
        pytest.skip("oracle not available")
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_parity(case: tuple[str, int, str, list[str]], corpus: Path,
                monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    name, rc, n, argv = case
    monkeypatch.chdir(corpus)
    code, out, err = _run(argv, capsys)
    if rc == 0:
        assert code == 0, err
        expected = lzma.decompress((SWEEP_ORACLE / f"{name}.json.xz").read_bytes()).decode()
        got_rows, exp_rows = json.loads(out), json.loads(expected)
        assert len(got_rows) == int(n) == len(exp_rows)
        for i, (g, e) in enumerate(zip(got_rows, exp_rows, strict=True)):
            assert g == e, f"row {i} differs"
            assert list(g) == list(e), f"row {i}: key order differs"
        assert out == expected  # exact serialisation: ", " / ": ", ASCII, final newline
    else:
        assert code != 0
        assert out == ""
        assert "Traceback" not in err
        assert err.startswith(("ixtool: error:", "Usage:")), err
        ref = (SWEEP_ORACLE / f"{name}.error").read_text()
        # same failure class: the reference's quoted subject appears in our message
        for needle in ("no-such-runner", "gb300-nv", "nope.yaml", "does-not-exist", "2k2k"):
            if needle in ref:
                assert needle in err


TOP_LEVEL = [c for c in CASES if c[1] == 0 and c[0].startswith(("test-config", "full-sweep__all",
                                                                 "full-sweep__multi"))]


@pytest.mark.parametrize("case", TOP_LEVEL, ids=[c[0] for c in TOP_LEVEL])
def test_reference_argv_at_top_level(case: tuple[str, int, str, list[str]], corpus: Path,
                                     monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``ixtool <the reference's argv>`` (``ixtool full-sweep …``): the script path of a
    workflow's ``generate_sweep_configs.py …`` line swapped for ``ixtool``."""
    name, _, _, argv = case
    monkeypatch.chdir(corpus)
    try:
        run(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    cap = capsys.readouterr()
    assert code == 0, cap.err
    assert cap.out == lzma.decompress((SWEEP_ORACLE / f"{name}.json.xz").read_bytes()).decode()


def test_reference_commands_not_in_root_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run(["--help"])
    out = capsys.readouterr().out
    assert "sweep" in out
    assert "full-sweep" not in out and "test-config" not in out
