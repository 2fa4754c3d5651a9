"""Fixtures: the real repository's workflow files, read from the shared tree snapshot."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from tests.conftest import SHARED

TREE = SHARED / "corpus" / "inferencex-tree-843c6254f.tar.xz"


def read_tree(prefixes: tuple[str, ...]) -> dict[str, bytes]:
    """Files of the real tree under ``prefixes`` (paths without the ``inferencex/``)."""
    out: dict[str, bytes] = {}
    with tarfile.open(TREE) as tar:
        for m in tar:
            if not m.isfile():
                continue
            rel = m.name.split("/", 1)[-1]
            if rel.startswith(prefixes):
                fh = tar.extractfile(m)
                assert fh is not None
                out[rel] = fh.read()
    return out


@pytest.fixture(scope="session")
def real_workflows() -> dict[str, bytes]:
    if not TREE.is_file():
        pytest.skip(f"real tree snapshot not found at {TREE}")
    return read_tree((".github/workflows/",))


@pytest.fixture(scope="session")
def real_configs() -> dict[str, bytes]:
    if not TREE.is_file():
        pytest.skip(f"real tree snapshot not found at {TREE}")
    return read_tree(("configs/",))


def here() -> Path:
    return Path(__file__).parent
