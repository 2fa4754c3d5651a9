"""``sweep from-changelog`` against the reference ``process_changelog.py`` itself.

The reference is run, not modelled: ``utils/process_changelog.py``, ``utils/constants.py``
and ``utils/matrix_logic/`` are taken from the tip of the full-history bundle (the newest
reference there, 2026-07-14) and laid into a clone of the data history bundle, whose
last commits carry the real configs and changelog up to the anchor; the reference
runs there with its own argv (``--changelog-file perf-changelog.yaml --base-ref C~1
--head-ref C``, as run-sweep.yml passes it), and ``ixtool sweep from-changelog`` with
the same argv.

Both outputs must be compact UTF-8 JSON, and equal byte for byte once the documented
differences between the bundle's reference (2026-07-14) and the contract ixtool
follows (the anchor's reference, CHANGELOG.md §4; docs/sweep.md "Parity with the
reference") are taken out — nothing else is normalised:

* ``null`` values: the 07-14 reference prints them (``"router": null``), the anchor's
  dumps without them;
* ``recipe-fingerprint`` on throughput rows, the ``agentic_evals`` and
  ``multinode_agentic_evals`` buckets and ``append-only`` in ``changelog_metadata``
  entries: added after 07-14 (§4.5 steps 15/18, §2);
* ``multi_node.agentic`` rows: the generator changed after 07-14 (one concurrency per
  row, the parallel layout in ``exp-name``, ``total-cpu-dram-gb``); ixtool follows the
  anchor's generator (``tests/sweep/test_parity.py``), so this bucket is compared only
  by the ranges that have none.

A range the 07-14 reference refuses (an entry field it does not know yet), or where its
``--trim-conc`` crashes (``TypeError: unhashable type: 'dict'`` on any single-node row
holding a mapping such as ``kv-offload-backend``), is counted, not compared; ixtool must
still succeed there.  At least 20 ranges must be compared, and each flag the workflows
add (``--trim-conc``, ``--all-evals``, ``--evals-only``) on at least 3.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BUNDLE, GIT_ENV, SHARED, git

FULL_BUNDLE = SHARED / "corpus" / "inferencex-full-history-9aeaa75d8.bundle"
REFERENCE_FILES = ("utils/process_changelog.py", "utils/constants.py", "utils/matrix_logic")
#: The changelog commits compared: the newest of the data bundle (first parent).
N_SLOW = 26
N_FAST = 1
MIN_COMPARED = 20

pytestmark = pytest.mark.skipif(
    not (FULL_BUNDLE.is_file() and BUNDLE.is_file())
    or importlib.util.find_spec("pydantic") is None
    or importlib.util.find_spec("yaml") is None,
    reason="needs ../shared's history bundles and pydantic + PyYAML (test extras) to run "
           "the reference")


@pytest.fixture(scope="module")
def ref_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of the data bundle with the reference scripts laid in (untracked)."""
    base = tmp_path_factory.mktemp("refparity")
    full, data = base / "full", base / "data"
    for bundle, dest, extra in ((FULL_BUNDLE, full, ["-b", "main-upto-0715", "--bare"]),
                                (BUNDLE, data, [])):
        subprocess.run(["git", "clone", "-q", *extra, str(bundle), str(dest)], env=GIT_ENV,
                       check=True)
    archive = subprocess.run(["git", "archive", "HEAD", *REFERENCE_FILES], cwd=full,
                             env=GIT_ENV, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(data)], input=archive, check=True)
    return data


def _commits(repo: Path, n: int) -> list[str]:
    """The ``n`` newest first-parent commits of the bundle's branch that change the
    changelog (whatever is checked out)."""
    return git(repo, "log", "--first-parent", f"-{n}", "--format=%h", "main",
               "--", "perf-changelog.yaml").split()


def _run(repo: Path, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    # the reference starts its generator as `python3 …`: this interpreter's, on PATH
    env = {**GIT_ENV, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{GIT_ENV['PATH']}"}
    return subprocess.run(argv, cwd=repo, env=env, capture_output=True, check=False)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n"


def _no_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


_HEX64 = re.compile(r"[0-9a-f]{64}")


def _without_later_fields(ix: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(ix))
    for family in ("single_node", "multi_node"):
        for rows in out[family].values():
            for r in rows:
                assert _HEX64.fullmatch(r.pop("recipe-fingerprint")), r
    del out["agentic_evals"], out["multinode_agentic_evals"]
    for e in out["changelog_metadata"]["entries"]:
        e.pop("append-only")
    return out  # type: ignore[no-any-return]


def compare(repo: Path, commit: str, flags: tuple[str, ...] = ()) -> str:
    """One range: ``"identical"``, ``"identical-without-multinode-agentic"`` or
    ``"reference-refuses"``; an AssertionError names any other difference."""
    git(repo, "checkout", "-qf", commit)
    argv = ["--changelog-file", "perf-changelog.yaml", "--base-ref", f"{commit}~1",
            "--head-ref", commit, *flags]
    ref = _run(repo, [sys.executable, "utils/process_changelog.py", *argv])
    ix = _run(repo, [sys.executable, "-m", "inferencex_tools", "sweep", "from-changelog",
                     *argv])
    assert ix.returncode == 0, ix.stderr.decode()
    ix_text = ix.stdout.decode()
    ix_obj = json.loads(ix_text)
    assert ix_text == _compact(ix_obj)  # compact, UTF-8, one final newline
    if ref.returncode != 0 and b"Extra inputs are not permitted" in ref.stderr:
        return "reference-refuses"  # an entry field newer than the 07-14 reference
    if ref.returncode != 0 and "--trim-conc" in flags and b"unhashable type" in ref.stderr:
        return "reference-crashes"  # its trim_conc hashes rows holding a mapping
    assert ref.returncode == 0, ref.stderr.decode()[-2000:]
    ref_text = ref.stdout.decode()
    ref_obj = json.loads(ref_text)
    assert ref_text == _compact(ref_obj)  # the same serialisation style
    want, got = _no_nulls(ref_obj), _without_later_fields(ix_obj)
    outcome = "identical"
    if "agentic" in want["multi_node"] or "agentic" in got["multi_node"]:
        want["multi_node"].pop("agentic", None)
        got["multi_node"].pop("agentic", None)
        outcome = "identical-without-multinode-agentic"
    for key in want:
        assert _compact(got[key]) == _compact(want[key]), f"{commit}: {key} differs"
    assert _compact(got) == _compact(want)
    return outcome


@pytest.mark.slow  # the reference validates every config with pydantic: ~7 s a range
def test_newest_range(ref_repo: Path) -> None:
    for c in _commits(ref_repo, N_FAST):
        assert compare(ref_repo, c) != "reference-refuses"


@pytest.mark.slow
def test_real_ranges(ref_repo: Path) -> None:
    outcomes = {c: compare(ref_repo, c) for c in _commits(ref_repo, N_SLOW)}
    compared = [c for c, o in outcomes.items() if o.startswith("identical")]
    assert len(compared) >= MIN_COMPARED, outcomes


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--trim-conc", "--all-evals", "--evals-only"])
def test_workflow_flags(ref_repo: Path, flag: str) -> None:
    """run-sweep.yml / e2e-tests.yml add these from the PR's labels."""
    outcomes = {c: compare(ref_repo, c, (flag,)) for c in _commits(ref_repo, 6)}
    assert sum(o.startswith("identical") for o in outcomes.values()) >= 3, outcomes


# ------------------------------------------------- the workflows' generator command lines

_GEN_LINE = re.compile(r"generate_sweep_configs\.py ((?:full-sweep|test-config)[^)\"'\n\\]*)")


def workflow_generator_argv(full: Path) -> list[list[str]]:
    """Every literal argv the workflows ever passed to generate_sweep_configs.py (the
    history's added lines), as run from the repository root today: configs under
    ``configs/`` (moved from ``.github/configs/`` in #1992) and the workflow's
    runner-label variables (``$RUNNER_TYPES``) set to two real labels."""
    log = subprocess.run(["git", "log", "-p", "--first-parent", "--format=%h", "--",
                          ".github/workflows"], cwd=full, env=GIT_ENV, check=True,
                         capture_output=True, text=True).stdout
    seen: dict[tuple[str, ...], None] = {}
    for line in log.splitlines():
        m = _GEN_LINE.search(line) if line.startswith("+") else None
        if m is None or "${{" in m.group(1):
            continue
        text = m.group(1).replace("${GITHUB_WORKSPACE}/", "").replace(".github/configs/",
                                                                       "configs/")
        argv = re.sub(r"\$\w+", "h200 b200", text).split()
        if any(a.startswith("--config-files") for a in argv):
            seen.setdefault(tuple(argv), None)
    return [list(a) for a in seen]


@pytest.mark.slow
def test_workflow_generator_argv(ref_repo: Path) -> None:
    """The reference generator and ``ixtool <argv>`` (the script path swapped for
    ``ixtool``) on the newest real configs: the same bytes, or both refuse."""
    argvs = workflow_generator_argv(ref_repo.parent / "full")
    assert len(argvs) >= 20
    git(ref_repo, "checkout", "-qf", "main")
    same = refused = 0
    for argv in argvs:
        ref = _run(ref_repo, [sys.executable, "utils/matrix_logic/generate_sweep_configs.py",
                              *argv])
        ix = _run(ref_repo, [sys.executable, "-m", "inferencex_tools", *argv])
        if ref.returncode == 0:
            assert ix.returncode == 0, (argv, ix.stderr.decode())
            assert ix.stdout == ref.stdout, argv
            same += 1
        else:
            assert ix.returncode == 2 and ix.stderr.startswith(b"ixtool: error:"), argv
            assert b"Traceback" not in ix.stderr
            refused += 1
    assert same >= 10, (same, refused)
