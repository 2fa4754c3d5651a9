"""Every example of every ``--help`` runs as shown, on the real InferenceX tree.

The examples are read from the CLI itself (the root's and each command's help), so a new
or edited example is run without being listed here.  They run with bash, each in a fresh
copy of a user's clone of the real tree on a PR branch (``origin`` is a bare clone served
by the local fake GitHub as SemiAnalysisAI/InferenceX, PR #1234; ``gh`` answers with its
token), with the files an example names made beside it (an event payload, the gate's
sweep matrix, a run's downloaded artifacts, three changelog versions, a merge in
conflict).  Each must end with the exit code :data:`EXPECT` gives (default 0: it does
what it says), never with a usage error, a traceback or an internal error.  Examples
that need a Slurm cluster run against the throw-away one-node cluster of
tests/launch/slurm_cluster.py (where munged, slurmctld and slurmd are installed and the
tests run as root): an ``sbatch`` on PATH says nothing about a cluster to talk to.

``test_every_example_parses`` (default run) only parses each example's command line;
``test_every_example_runs`` runs them all (slow: ~2 CPU-minutes).
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

from inferencex_tools.cli.main import app
from tests.conftest import GIT_ENV, TREE_SNAPSHOT, extract_real_tree, git

SLUG = "SemiAnalysisAI/InferenceX"
PRN = 1234
KEY = "dsr1-fp8-h200-sglang"
ENTRY = """
- config-keys:
    - dsr1-fp8-h200-sglang
  description:
    - "{text}"
  pr-link: {link}
"""


def _helps() -> list[tuple[str, str]]:
    """(command path, help text) of the root and of every command."""
    root = typer.main.get_command(app)
    out = [("", root.help or "")]

    def walk(cmd: typer.core.TyperGroup, path: list[str]) -> None:
        for name, sub in cmd.commands.items():
            if sub.hidden:
                continue
            out.append((" ".join([*path, name]), sub.help or ""))
            if isinstance(sub, typer.core.TyperGroup):
                walk(sub, [*path, name])

    walk(root, [])
    return out


def examples() -> list[tuple[str, str]]:
    """(command path, example as a shell line) of every help text: the indented lines
    after ``Example:``/``Examples:`` up to a blank line; a trailing ``\\`` continues a
    line, ``  (…)`` after two spaces is a comment."""
    found: list[tuple[str, str]] = []
    for path, text in _helps():
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if not re.fullmatch(r"\s*Examples?(?: \(.*\))?:\s*", line):
                continue
            current = ""
            for raw in lines[i + 1:]:
                if not raw.strip():
                    break
                part = re.sub(r"\s{2,}\(.*\)\s*$", "", raw.strip())
                current = f"{current} {part}".strip() if current else part
                if current.endswith("\\"):
                    current = current[:-1].rstrip()
                    continue
                found.append((path, current))
                current = ""
    return found


EXAMPLES = examples()
IDS = [ex for _, ex in EXAMPLES]

# exit codes other than 0, each with why that is what the example must give here
EXPECT: dict[str, tuple[set[int], str]] = {
    "ixtool config validate": ({1}, "the real tree has a config error (SW403)"),
    "ixtool merge-with-reuse 1234 --dry-run": ({1}, "no finished sweep of the PR: refused"),
    "GH_TOKEN=$(gh auth token) ixtool merge-with-reuse 1234 --yes": (
        {1}, "no finished sweep of the PR: refused"),
    "ixtool policy check --config-keys 'minimaxm3-*' --rows": (
        {0, 1}, "the real tree's verdicts (docs/policy-real-tree.md)"),
    "ixtool policy curves --strict": ({0, 1}, "warnings fail under --strict"),
    "ixtool al audit --artifacts run": ({0, 1}, "the measured AL of a generated run"),
    "ixtool al audit 29784780049 --markdown al.md": ({0, 1}, "the same run through the API"),
    "ixtool launch render --config-key dsr1-fp8-h200-sglang --arm 1 --conc 64": (
        {0}, "rendered (warnings allowed)"),
    "ixtool hook config --all": ({1}, "the real tree's config errors, with the baseline hint"),
    # the real tree's minimaxm3_eagle3.yaml has the run's values but not the import's
    # provenance line: AL403, replaced only with --force (in a curve's own PR)
    "ixtool policy curves import 28061204145 --artifacts run": ({1}, "AL403"),
    "ixtool policy curves import 28061204145 --repo SemiAnalysisAI/InferenceX": ({1}, "AL403"),
}
SLURM = {"launch submit", "launch status"}
SUBMIT = "ixtool launch submit --config-key dsr1-fp8-h200-sglang --partition gpu --submit"
# the jobs run the real tree's launcher, whose own salloc asks for partition h200 (and
# its srun for a container): on the test's one-node cluster they end FAILED, which the
# command reports as findings; a usage error (exit 2) would be a defect
for _ex in (f"{SUBMIT} --wait", "ixtool launch status --wait"):
    EXPECT[_ex] = ({1}, "the real launcher's jobs end FAILED on the test cluster (LA403)")


def test_examples_are_found() -> None:
    commands = {p for p, _ in EXAMPLES}
    assert len(EXAMPLES) >= 40 and {"", "rules", "ci gate", "sweep full"} <= commands
    unknown = set(EXPECT) - set(IDS)
    assert not unknown, f"EXPECT names examples no help shows: {unknown}"


def _argv(example: str) -> list[list[str]]:
    """The ixtool command lines of a shell example (pipes, && and env prefixes split)."""
    out = []
    for part in re.split(r"\s*(?:\||&&)\s*", example):
        words = shlex.split(part)
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):  # VAR=value ixtool …
            words.pop(0)
        if words and words[0] == "ixtool":
            out.append([w for w in words[1:] if not w.startswith(">")])
    return out


@pytest.mark.parametrize("example", IDS)
def test_every_example_parses(example: str) -> None:
    """Each ixtool command line of an example names a command and gives options,
    choices and arguments it accepts (parsed, not run)."""
    from typer import _click as click

    root = typer.main.get_command(app)
    top = root.make_context("ixtool", [], resilient_parsing=True)
    for argv in _argv(example):
        cmd: object = root
        words = list(argv)
        while isinstance(cmd, typer.core.TyperGroup) and words and not words[0].startswith("-"):
            name = words.pop(0)
            cmd = cmd.get_command(top, name)
            assert cmd is not None, f"{example}: no command {name!r}"
        assert not isinstance(cmd, typer.core.TyperGroup) or \
            cmd.invoke_without_command, f"{example}: a group without a command"
        try:
            cmd.make_context("ixtool", words, parent=top)  # type: ignore[attr-defined]
        except click.exceptions.ClickException as exc:
            raise AssertionError(f"{example}: {exc.format_message()}") from None


# ------------------------------------------------------------------------- the world


@dataclass
class World:
    user: Path  # the user's clone, on the PR branch
    files: Path  # files examples name, made once
    env: dict[str, str]
    fake: object


def _git_env() -> dict[str, str]:
    return {k: v for k, v in GIT_ENV.items()
            if not k.startswith(("GITHUB_", "GH_", "IXTOOL_")) and k != "CI"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    from tests.merge.fake_github import PR, FakeGitHub, Run

    if not TREE_SNAPSHOT.is_file():
        pytest.skip(f"real tree snapshot not found at {TREE_SNAPSHOT}")
    tmp = tmp_path_factory.mktemp("examples")
    seed = extract_real_tree(tmp / "seed")
    base = git(seed, "rev-parse", "HEAD").strip()
    git(seed, "checkout", "-q", "-b", "feat")
    master = seed / "configs" / "nvidia-master.yaml"
    text = master.read_text()
    at = text.index(f"\n{KEY}:\n")
    end = text.index("\n\n", at)
    master.write_text(text[:at] + text[at:end].replace("conc-end: 64", "conc-end: 128")
                      + text[end:])
    changelog = seed / "perf-changelog.yaml"
    history = changelog.read_text().rstrip("\n") + "\n"
    changelog.write_text(history + ENTRY.format(text="Extend DSR1 FP8 H200 SGLang to c128.",
                                                link=f"https://github.com/{SLUG}/pull/{PRN}"))
    git(seed, "commit", "-qam", "Extend DSR1 FP8 H200 SGLang to c128")
    git(seed, "checkout", "-q", "main")  # main moves on: another PR's entry
    changelog.write_text(history + ENTRY.format(
        text="Re-run DSR1 FP8 H200 SGLang.", link=f"https://github.com/{SLUG}/pull/1200"))
    git(seed, "commit", "-qam", "Re-run DSR1 FP8 H200 SGLang (#1200)")
    bare = tmp / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(bare)], env=GIT_ENV,
                   check=True)
    fake = FakeGitHub(bare, SLUG).start()
    fake.add_pr(PR(PRN, "feat", "Extend DSR1 FP8 H200 SGLang to c128", []))
    url = f"https://github.com/{SLUG}.git"
    user = tmp / "user"
    subprocess.run(["git", "-c", f"url.{bare}.insteadOf={url}", "clone", "-q", "-b", "feat",
                    url, str(user)], env=GIT_ENV, check=True)
    git(user, "config", f"url.{bare}.insteadOf", url)
    head = git(user, "rev-parse", "HEAD").strip()

    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(f"#!/bin/sh\n[ \"$1 $2\" = 'auth token' ] && echo {fake.token}\n")
    gh.chmod(gh.stat().st_mode | stat.S_IXUSR)
    env = {**_git_env(), "GH_TOKEN": fake.token, "GITHUB_API_URL": fake.url,
           "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
                   f"{os.environ.get('PATH', '')}"}

    files = tmp / "files"
    files.mkdir()
    _made(files, seed, base, head, env, user, fake, Run)
    yield World(user, files, env, fake)
    fake.stop()  # type: ignore[attr-defined]


def _made(files: Path, seed: Path, base: str, head: str, env: dict[str, str], user: Path,
          fake: object, run_cls: type) -> None:
    """The files the examples name (copied next to the example that names them)."""
    from tests.al.fixtures import GQA_RATES, seed_jobs, write_run
    from tests.al.test_api import zip_dir
    from tests.al.test_curves_import import collection, matrix

    main_cl = git(seed, "show", "main:perf-changelog.yaml")
    (files / "base.yaml").write_text(git(seed, "show", f"{base}:perf-changelog.yaml"))
    (files / "ours.yaml").write_text(git(seed, "show", "feat:perf-changelog.yaml"))
    (files / "theirs.yaml").write_text(main_cl)
    ev = json.loads((Path(__file__).parent / "cases" / "ci" / "events" /
                     "pull_request.synchronize.json").read_text()
                    .replace("__BASE_SHA__", base).replace("__HEAD_SHA__", head))
    ev["number"] = ev["pull_request"]["number"] = PRN
    (files / "event.json").write_text(json.dumps(ev))
    p = subprocess.run([sys.executable, "-m", "inferencex_tools", "ci", "gate", "--base",
                        "origin/main", "--pr", str(PRN), "--label", "sweep-enabled",
                        "--no-policy", "--matrix-out", str(files / "sweep-matrix.json")],
                       cwd=user, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    run = write_run(files / "run", seed_jobs(random.Random(5), eval_rates=GQA_RATES))
    fake.runs.append(run_cls(id=29784780049, head_sha=head, head_branch="feat",  # type: ignore[attr-defined]
                             artifacts=[]))
    fake.archives[29784780049] = {d.name: zip_dir(d) for d in sorted(run.iterdir())}  # type: ignore[attr-defined]
    curves = collection(files / "speedbench", matrix())
    fake.runs.append(run_cls(id=28061204145, head_sha=head, head_branch="main",  # type: ignore[attr-defined]
                             artifacts=[]))
    fake.archives[28061204145] = {d.name: zip_dir(d) for d in sorted(curves.iterdir())}  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def slurm_env() -> Iterator[dict[str, str]]:
    """SLURM_CONF of a throw-away one-node cluster whose partition is the examples' gpu."""
    import tempfile

    from tests.launch import slurm_cluster

    gone = slurm_cluster.missing()
    if gone:
        pytest.skip("needs Slurm and munge (a local cluster): missing " + ", ".join(gone))
    if os.geteuid() != 0:
        pytest.skip("the local Slurm cluster needs root (slurmd)")
    base = Path(tempfile.mkdtemp(prefix="ixslurm-"))
    cl = slurm_cluster.start(base, partition="gpu")
    try:
        yield {"SLURM_CONF": cl.env["SLURM_CONF"]}
    finally:
        cl.stop()
        shutil.rmtree(base, ignore_errors=True)


def _prepare(work: Path, w: World, example: str, env: dict[str, str]) -> None:
    """What the example assumes besides the checkout."""
    for name in ("base.yaml", "ours.yaml", "theirs.yaml", "event.json", "sweep-matrix.json"):
        if name in example:
            shutil.copy(w.files / name, work / name)
    if "--artifacts run" in example:
        src = w.files / ("speedbench" if "curves import" in example else "run")
        shutil.copytree(src, work / "run")
    if "resolve-conflict" in example:  # a merge of main stopped on the changelog
        p = subprocess.run(["git", "merge", "-q", "origin/main"], cwd=work, env=GIT_ENV,
                           capture_output=True, text=True)
        assert p.returncode == 1 and "perf-changelog.yaml" in p.stdout + p.stderr, p.stdout
    if example.startswith("ixtool hook config configs/"):  # pre-commit passes staged files
        with (work / "configs" / "nvidia-master.yaml").open("a") as fh:
            fh.write("# reviewed\n")
        git(work, "add", "configs/nvidia-master.yaml")
    if example.startswith("ixtool launch status"):  # the state `launch submit` leaves
        p = subprocess.run(["bash", "-c", SUBMIT], cwd=work, env=env, capture_output=True,
                           text=True)
        assert (work / "launch-jobs" / "state.json").is_file(), p.stdout + p.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("path", "example"), EXAMPLES, ids=IDS)
def test_every_example_runs(world: World, tmp_path: Path, path: str, example: str,
                            request: pytest.FixtureRequest) -> None:
    env = world.env
    if path in SLURM:
        env = {**env, **request.getfixturevalue("slurm_env")}
    work = tmp_path / "work"
    shutil.copytree(world.user, work, symlinks=True)
    _prepare(work, world, example, env)
    p = subprocess.run(["bash", "-c", example], cwd=work, env=env,
                       capture_output=True, text=True)
    text = p.stdout + p.stderr
    codes, why = EXPECT.get(example, ({0}, "it does what it says"))
    assert "Traceback" not in text and "internal error" not in text, text[-3000:]
    assert p.stdout.strip() != "[]", f"selects nothing:\n{p.stderr}"  # an empty example
    assert p.returncode in codes, f"exit {p.returncode}, expected {codes} ({why}):\n" \
        f"{text[-3000:]}"
