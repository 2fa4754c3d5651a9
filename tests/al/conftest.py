"""The audit's world: this repository's own seed recipe (configs/, benchmarks/, runners/,
golden_al_distribution/) as the sweep at --root, and generated run artifacts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from inferencex_tools.al.judge import Bands
from inferencex_tools.al.launches import Named
from inferencex_tools.al.service import Audit, AuditRequest, RunInfo, audit, launches
from inferencex_tools.io.artifacts import Limits, run_directory
from tests.al.fixtures import Job, write_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def seed_launches() -> list[Named]:
    """The launches of the seed repository (one policy check for the whole session)."""
    return launches(AuditRequest(root=ROOT, artifacts=[]))


Auditor = Callable[..., Audit]


@pytest.fixture
def run_audit(tmp_path: Path, seed_launches: list[Named]) -> Auditor:
    """Write a run's artifacts, audit them offline."""

    def go(jobs: Sequence[Job], *, limits: Limits | None = None, bands: Bands | None = None,
           throughput_only: bool = False, seed: int = 7, prepare: Callable[[Path], None]
           | None = None) -> Audit:
        d = tmp_path / "run"
        write_run(d, jobs, seed=seed)
        if prepare is not None:
            prepare(d)
        req = AuditRequest(root=ROOT, artifacts=run_directory(d, limits or Limits()),
                           run=RunInfo(directory=str(d)), bands=bands or Bands(),
                           launches=seed_launches, throughput_only=throughput_only)
        return audit(req)

    return go
