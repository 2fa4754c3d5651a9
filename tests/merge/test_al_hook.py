"""merge-with-reuse audits the run it is about to reuse: a run whose throughput jobs did not
serve the forced AL is refused (MR330, nothing written) unless --allow-al-mismatch
(MR331, the jobs named in the squash commit).  Real PyGithub against the fake GitHub;
the rows and launches come from the run's head commit."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from tests.al.conftest import ROOT
from tests.al.fixtures import REAL_RATES, seed_jobs, write_run
from tests.al.test_api import zip_dir
from tests.merge.conftest import BASE, PRN, World, entry, git, rules_of
from tests.merge.fake_github import PR, Run

RECIPE = ("configs", "runners", "golden_al_distribution", "benchmarks/benchmark_lib.sh",
          "benchmarks/single_node")
KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"


def open_recipe_pr(w: World, tmp: Path, rates: tuple[float, ...]) -> str:
    """main carries the seed recipe; the PR changes its changelog; run 1001 benchmarked the
    PR head and uploaded ``rates``-acceptance artifacts."""
    for rel in RECIPE:
        src, dst = ROOT / rel, w.seed / rel
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    git(w.seed, "add", "-A")
    git(w.seed, "commit", "-q", "-m", "the seed recipe")
    git(w.seed, "push", "-q", "origin", "main")
    git(w.seed, "checkout", "-q", "-b", "feat", "main")
    sha = w.commit_seed("perf-changelog.yaml", BASE + "\n" + entry(KEY, "minimax mtp", "XXX"),
                        "minimax mtp entry")
    git(w.seed, "push", "-q", "origin", "feat")
    git(w.seed, "checkout", "-q", "main")
    w.fake.add_pr(PR(PRN, "feat", "MiniMax-M3 EAGLE3 on H200", ["full-sweep-enabled"]))
    w.fake.runs.append(Run(1001, sha, "feat", created=100,
                           artifacts=[("results_bmk", False)]))
    d = write_run(tmp / "run", seed_jobs(random.Random(2), rates=rates))
    w.fake.archives[1001] = {p.name: zip_dir(p) for p in sorted(d.iterdir())}
    w.clone_user()
    return sha


def test_run_that_did_not_serve_the_forced_al_is_refused(world: World, tmp_path: Path) -> None:
    open_recipe_pr(world, tmp_path, REAL_RATES)
    res = world.run()
    assert "MR330" in rules_of(res), res.findings
    f = next(f for f in res.findings if f.rule == "MR330")
    assert "run 1001: 14 throughput job(s) did not serve" in f.message
    assert world.writes() == [] and not world.fake.prs[PRN].merged
    assert res.info["al_audit"]["verdicts"] == {"ERROR": 14}
    # only the spec-decoding throughput jobs' artifacts were downloaded
    assert len([p for _, p, _ in world.fake.log if p.startswith("/_blobs/")]) == 28


def test_override_is_named_in_the_squash_commit(world: World, tmp_path: Path) -> None:
    open_recipe_pr(world, tmp_path, REAL_RATES)
    res = world.run(allow_al_mismatch=True)
    assert "MR331" in rules_of(res) and "MR330" not in rules_of(res), res.findings
    assert world.fake.prs[PRN].merged
    msg = world.fake.merges[0]["message"]
    assert "Forced AL not served (merged with --allow-al-mismatch): 14 throughput job(s)" \
        in msg
    assert f"{KEY} [tp8 kv=none conc=1 throughput]" in msg


def test_run_that_served_it_merges(world: World, tmp_path: Path) -> None:
    open_recipe_pr(world, tmp_path, (0.80, 0.59, 0.44))
    res = world.run()
    assert not {"MR330", "MR331"} & rules_of(res), res.findings
    assert res.info["al_audit"]["verdicts"] == {"ok": 14}
    assert world.fake.prs[PRN].merged
