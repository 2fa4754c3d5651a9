"""The three ways users install ixtool, each from scratch, on the real InferenceX tree.

Marked ``shipped`` and run by ``.ci/run`` in a step of its own (``pytest -m shipped``),
never in the default run: every test installs from the package index (network: pip
only).  The test venv's own packages are never visible to what is tested, so a runtime
import that is not a declared dependency (or not in the Action's hashed lock) fails here.

(a) the Action as a workflow runs it (``action.yml`` through tests/ci/action_harness.py:
    the lock installed with ``pip --require-hashes --no-deps --only-binary=:all:`` into a
    fresh venv, ``python -I``, a ``pull_request`` event, ``ci gate`` with pr-gate.yml's
    arguments) on the real tree with a seed PR: the commit whose new changelog entry has
    ``pr-link: TBD`` fails with the changelog finding, the fixed head passes;
(b) ``pip install .`` (no extras) into a clean venv, then every command once on the real
    tree (GitHub is the local fake server, reached through PyGithub and requests);
(c) ``pre-commit try-repo`` of the three hooks (``language: python``: pre-commit builds
    their environment itself) on a commit that touches a recipe: they judge what the
    commit changes, not the findings the real tree already has.

(a) and (b) also import every module of the package and resolve every ``import`` in its
source (lazy ones included) in the installed environment.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

from tests.ci.action_harness import Runner
from tests.conftest import GIT_ENV, TREE_SNAPSHOT, extract_real_tree, git

pytestmark = pytest.mark.shipped

ROOT = Path(__file__).resolve().parents[2]
SLUG = "SemiAnalysisAI/InferenceX"
PRN = 2424
KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"
EVENTS = ROOT / "tests" / "cases" / "ci" / "events"
# the PR's recipe change: the Mooncake DRAM arm of the H200 EAGLE3 recipe gets c16
ARM = 'kv-offload-backend: { name: mooncake, version: "0.3.11.post1" }, conc-list: [12, 14] }'
ENTRY = """
- config-keys:
    - minimaxm3-fp8-h200-vllm-agentic-mtp
  scenario-type:
    - agentic-coding
  description:
    - "Extend the Mooncake DRAM offload arm to concurrency 16."
  pr-link: {link}
"""
PR_URL = f"https://github.com/{SLUG}/pull/{PRN}"
SCRIPT = "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"
TIMES: dict[str, float] = {}  # what each step took, printed (the figures of issue 31)


@pytest.fixture(autouse=True)
def _print_times() -> Iterator[None]:
    yield
    for what, s in TIMES.items():
        print(f"{what}: {s:.1f} s")
    TIMES.clear()


def _base_python() -> str:
    """The interpreter the test venv was made from (what setup-python / a user has)."""
    return getattr(sys, "_base_executable", sys.executable)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in GIT_ENV.items()
           if not k.startswith(("GITHUB_", "PYTHON", "VIRTUAL_ENV", "PRE_COMMIT", "IXTOOL_"))
           and k not in ("CI", "GH_TOKEN")}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    return {**env, **extra}


# ------------------------------------------------------------------ the seed PR


@dataclass
class SeedPR:
    tree: Path  # the real tree's repository: main = base, feat = the PR
    base: str
    tbd: str  # the PR commit with `pr-link: TBD`
    fixed: str  # the head after the fix


def _seed_pr(dest: Path) -> SeedPR:
    # no skip: CI's shipped step means nothing without the real tree
    assert TREE_SNAPSHOT.is_file(), f"{TREE_SNAPSHOT} not found (../shared or $IXTOOL_SHARED)"
    root = extract_real_tree(dest)
    base = git(root, "rev-parse", "HEAD").strip()
    git(root, "checkout", "-q", "-b", "feat")
    master = root / "configs" / "nvidia-master.yaml"
    text = master.read_text()
    at = text.index(ARM, text.index(f"\n{KEY}:\n"))
    master.write_text(text[:at] + ARM.replace("[12, 14]", "[12, 14, 16]")
                      + text[at + len(ARM):])
    changelog = root / "perf-changelog.yaml"
    history = changelog.read_text().rstrip("\n") + "\n"
    changelog.write_text(history + ENTRY.format(link="TBD"))
    git(root, "commit", "-qam", "Extend the MiniMax-M3 H200 EAGLE3 DRAM arm to c16")
    tbd = git(root, "rev-parse", "HEAD").strip()
    changelog.write_text(history + ENTRY.format(link=PR_URL))
    git(root, "commit", "-qam", "changelog: the PR's link")
    fixed = git(root, "rev-parse", "HEAD").strip()
    return SeedPR(root, base, tbd, fixed)


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> SeedPR:
    return _seed_pr(tmp_path_factory.mktemp("seed"))


# ------------------------------------------------------- imports, as installed

IMPORT_CHECK = r"""
import ast, importlib, importlib.util, json, pkgutil, sys
import inferencex_tools
pkg = inferencex_tools.__path__[0]
failed, names = [], set()
for mod in pkgutil.walk_packages(inferencex_tools.__path__, "inferencex_tools."):
    if mod.name.rsplit(".", 1)[-1].startswith("_sandboxd") or mod.name.endswith("__main__"):
        continue
    try:
        m = importlib.import_module(mod.name)
    except Exception as exc:
        failed.append(f"import {mod.name}: {type(exc).__name__}: {exc}")
        continue
    tree = ast.parse(open(m.__file__, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
for name in sorted(names):
    top = name.split(".")[0]
    if top in sys.stdlib_module_names or top == "inferencex_tools":
        continue
    try:
        found = importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        failed.append(f"not installed: {name}")
print(json.dumps({"failed": failed, "checked": len(names), "file": inferencex_tools.__file__}))
"""


def check_imports(python: Path, *, cwd: Path) -> dict[str, object]:
    """Every module of the installed package imports, and every name any of them imports
    (at the top or inside a function) is installed, in the environment of ``python``."""
    proc = subprocess.run([str(python), "-I", "-c", IMPORT_CHECK], cwd=cwd, env=_clean_env(),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report: dict[str, object] = json.loads(proc.stdout)
    assert report["failed"] == [], report
    return report


# ------------------------------------------------------------ (a) the Action


def _event(runner: Runner, seed: SeedPR, head: str) -> Path:
    ev = json.loads((EVENTS / "pull_request.synchronize.json").read_text()
                    .replace("__BASE_SHA__", seed.base).replace("__HEAD_SHA__", head))
    ev["number"] = ev["pull_request"]["number"] = PRN
    ev["before"], ev["after"] = seed.base, head
    ev["pull_request"]["labels"] = []
    ev["pull_request"]["html_url"] = PR_URL
    path = runner.temp / f"event-{head[:12]}.json"
    runner.temp.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(ev))
    return path


def _checkout_pr(runner: Runner, seed: SeedPR, head: str) -> None:
    """pr-gate.yml's checkouts: the PR head as data in ``pr/`` (fetch-depth 0)."""
    pr = runner.workspace / "pr"
    if not pr.exists():
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(seed.tree), str(pr)],
                       env=GIT_ENV, check=True)
    git(pr, "checkout", "-q", "--detach", head)


def _gate(runner: Runner, seed: SeedPR, head: str) -> tuple[object, str]:
    _checkout_pr(runner, seed, head)
    runner.base_env["GITHUB_EVENT_PATH"] = str(_event(runner, seed, head))
    (runner.temp / "comments.json").write_text("[]")
    t = time.perf_counter()
    run = runner.run_action({
        "command": "ci gate",
        "args": f"--root . --comments {runner.temp}/comments.json "
                f"--matrix-out {runner.temp}/sweep-matrix.json",
        "working-directory": "pr", "sarif": "ixtool.sarif"})
    TIMES[f"action ci gate {head[:7]}"] = time.perf_counter() - t
    return run, run.log


def test_the_action_gates_the_seed_pr(seed: SeedPR, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    runner = Runner(workspace=ws, temp=tmp_path / "runner-temp", cache_store=tmp_path / "cache",
                    action_path=ROOT, python=_base_python(),
                    base_env=_clean_env(HOME=str(tmp_path), GITHUB_EVENT_NAME="pull_request",
                                        GITHUB_REPOSITORY=SLUG))
    (tmp_path / "cache").mkdir()
    t = time.perf_counter()
    run, log = _gate(runner, seed, seed.tbd)
    TIMES["action install + first gate"] = time.perf_counter() - t
    assert run.step_outputs["prepare"]["cache"] == "false", log  # no cache in PR runs
    assert "using the cached virtualenv" not in log, log  # a cold install from the lock
    assert "internal error" not in log and "Traceback" not in log, log
    assert run.outputs["exit-code"] == "1", log
    assert run.outputs["gate"] == "fail", log
    assert re.search(r"::error file=perf-changelog\.yaml,line=\d+.*CL50\d", log), log
    stages = json.loads(run.outputs["stages"])
    assert stages["policy"] == "ok" and stages["changelog"] != "ok", stages
    sarif = json.loads(Path(run.outputs["sarif-file"]).read_text())
    assert any(r["ruleId"].startswith("CL50") for r in sarif["runs"][0]["results"])

    fixed, log = _gate(runner, seed, seed.fixed)
    assert "using the cached virtualenv" in log, log  # the same job's venv, second use
    assert fixed.outputs["exit-code"] == "0", log
    assert fixed.outputs["gate"] == "pass", log
    assert json.loads(fixed.outputs["stages"])["policy"] == "ok", log

    venv = Path(run.step_outputs["prepare"]["venv"])
    report = check_imports(venv / "bin" / "python", cwd=ws / "pr")
    # ixtool itself comes from the action's checkout, its dependencies only from the lock
    assert str(report["file"]).startswith(str(ROOT)), report
    freeze = subprocess.run([str(venv / "bin" / "python"), "-I", "-m", "pip", "freeze"],
                            capture_output=True, text=True, check=True).stdout
    lock = {_dist(ln) for ln in (ROOT / "action-requirements.txt").read_text().splitlines()
            if re.match(r"^[A-Za-z0-9]", ln)}
    installed = {_dist(ln) for ln in freeze.splitlines()}
    assert installed <= lock, installed - lock


def _dist(line: str) -> str:
    """The normalized distribution name of a ``name==version …`` line (PEP 503)."""
    return re.sub(r"[-_.]+", "-", line.split("==")[0].strip()).lower()


# --------------------------------------------------------- (b) pip install .


@pytest.fixture(scope="module")
def pip_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip install .`` (no extras) into a new virtualenv."""
    venv = tmp_path_factory.mktemp("pip") / "venv"
    t = time.perf_counter()
    subprocess.run([_base_python(), "-m", "venv", str(venv)], check=True, env=_clean_env())
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                           str(ROOT)], env=_clean_env(HOME=str(venv.parent)),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    TIMES["pip install ."] = time.perf_counter() - t
    return venv


@pytest.fixture(scope="module")
def world(seed: SeedPR, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """The seed PR on a bare ``origin`` served by the local fake GitHub, and the user's
    clone at the fixed head (``origin/main`` is the base)."""
    from tests.merge.fake_github import PR, FakeGitHub

    tmp = tmp_path_factory.mktemp("world")
    bare = tmp / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.tree), str(bare)], env=GIT_ENV,
                   check=True)
    fake = FakeGitHub(bare, SLUG).start()
    fake.add_pr(PR(PRN, "feat", "Extend the MiniMax-M3 H200 EAGLE3 DRAM arm to c16", []))
    user = tmp / "user"
    subprocess.run(["git", "clone", "-q", "-b", "feat", str(bare), str(user)], env=GIT_ENV,
                   check=True)
    yield {"fake": fake, "user": user, "tmp": tmp}
    fake.stop()


def _leaves(cmd: typer.core.TyperGroup, path: list[str]) -> list[str]:
    out = []
    for name, sub in cmd.commands.items():
        if sub.hidden:
            continue
        if isinstance(sub, typer.core.TyperGroup):
            if sub.invoke_without_command:
                out.append(" ".join([*path, name]))
            out += _leaves(sub, [*path, name])
        else:
            out.append(" ".join([*path, name]))
    return out


# Every command once on the user's clone of the seed PR (fixed head; origin/main = base):
# (command, argv after `ixtool`, the exit codes it may give there).  Files it reads are
# made by `_files`; `sweep-matrix.json` by the `ci gate` before the commands that read it.
COMMANDS: list[tuple[str, list[str], set[int]]] = [
    ("rules", ["rules", "CL502", "PO308"], {0}),
    ("labels explain", ["labels", "explain", "full-sweep-enabled", "evals-only"], {0}),
    ("config validate", ["config", "validate", "--base", "origin/main"], {0}),
    ("changelog validate", ["changelog", "validate", "--base", "origin/main", "--pr",
                            str(PRN)], {0}),
    ("changelog canonicalize", ["changelog", "canonicalize", "--pr", str(PRN)], {0}),
    ("changelog resolve-conflict", ["changelog", "resolve-conflict", "--pr", str(PRN)],
     {1, 2}),  # no conflict in progress: a refusal
    ("changelog merge-driver", ["changelog", "merge-driver", "{tmp}/base.yaml",
                                "{tmp}/ours.yaml", "{tmp}/theirs.yaml", "--pr", str(PRN)],
     {0}),
    ("sweep full", ["sweep", "full", "--model-prefix", "minimaxm3", "--single-node"], {0}),
    ("sweep test-config", ["sweep", "test-config", "--config-keys", KEY], {0}),
    ("sweep from-changelog", ["sweep", "from-changelog", "--base", "origin/main"], {0}),
    ("sweep explain", ["sweep", "explain", KEY], {0}),
    ("ci plan", ["ci", "plan", "--event", "{tmp}/event.json", "--event-name", "pull_request",
                 "--root", "."], {0}),
    ("ci gate", ["ci", "gate", "--base", "origin/main", "--pr", str(PRN), "--label",
                 "sweep-enabled", "--matrix-out", "{tmp}/sweep-matrix.json"], {0}),
    ("ci shards", ["ci", "shards", "--matrix", "{tmp}/sweep-matrix.json", "--canary"], {0}),
    ("ci row", ["ci", "row", "--matrix", "{tmp}/sweep-matrix.json", "--id", "{row}"], {0}),
    ("ci priority", ["ci", "priority", "--input", "{tmp}/sweep-matrix.json", "--event-name",
                     "push"], {0}),
    ("policy golden", ["policy", "golden", "minimaxm3", "--k", "3", "--thinking", "on",
                       "--draft", "Inferact/MiniMax-M3-EAGLE3-GQA"], {0}),
    ("policy check", ["policy", "check", "--config-keys", "minimaxm3-fp8-h200-*"], {0, 1}),
    ("policy trace", ["policy", "trace", "benchmarks/single_node/agentic/"
                      "minimaxm3_fp8_h200_mtp.sh", "--set", "CONC=16"], {0, 1}),
    ("policy init", ["policy", "init", "--output", "{tmp}/registry.yaml"], {0}),
    ("policy curves", ["policy", "curves"], {0, 1}),
    ("policy curves import", ["policy", "curves", "import", "31540120459", "--repo", SLUG],
     {2}),  # the fake GitHub has no such run: a clear API error
    ("launch render", ["launch", "render", "--config-key", KEY, "--arm", "2", "--conc", "16"],
     {0, 1}),
    ("launch submit", ["launch", "submit", "--config-key", KEY, "--arm", "2"], {0, 1}),
    ("launch status", ["launch", "status", "--state", "{tmp}/launch-state.json"], {0, 2}),
    ("al audit", ["al", "audit", "--artifacts", "{tmp}/run"], {0, 1}),
    ("review", ["review", "--base", "origin/main", "--pr", str(PRN), "--repo", SLUG, "--post"],
     {0}),
    ("merge-with-reuse", ["merge-with-reuse", str(PRN), "--repo", SLUG, "--dry-run"], {1}),
    ("hook", ["hook", "changelog", "perf-changelog.yaml"], {0}),
    ("changelog add", ["changelog", "add", "-k", KEY, "-d", "A note."], {0}),  # writes: last
]


def _files(tmp: Path, seed: SeedPR) -> None:
    """The files the commands read, outside the clone (``review`` wants a clean checkout)."""
    base = git(seed.tree, "show", f"{seed.base}:perf-changelog.yaml")
    (tmp / "base.yaml").write_text(base)
    # a merge of main into the PR branch: ours is the PR's, main gained another entry
    (tmp / "ours.yaml").write_text(git(seed.tree, "show", f"{seed.fixed}:perf-changelog.yaml"))
    (tmp / "theirs.yaml").write_text(base.rstrip("\n") + "\n" + ENTRY.format(
        link="https://github.com/SemiAnalysisAI/InferenceX/pull/2400").replace(
        "concurrency 16", "concurrency 18"))
    ev = json.loads((EVENTS / "pull_request.synchronize.json").read_text()
                    .replace("__BASE_SHA__", seed.base).replace("__HEAD_SHA__", seed.fixed))
    (tmp / "event.json").write_text(json.dumps(ev))
    (tmp / "run" / "results_bmk").mkdir(parents=True, exist_ok=True)


def test_pip_install_then_every_command(pip_venv: Path, seed: SeedPR,
                                        world: dict[str, object]) -> None:
    from inferencex_tools.cli.main import app

    leaves = set(_leaves(typer.main.get_command(app), []))
    covered = {name for name, _, _ in COMMANDS}
    assert covered == leaves, f"commands not run: {leaves - covered}; unknown: {covered - leaves}"
    user = Path(str(world["user"]))
    fake = world["fake"]
    tmp = Path(str(world["tmp"]))
    _files(tmp, seed)
    report = check_imports(pip_venv / "bin" / "python", cwd=user)
    assert "site-packages" in str(report["file"]), report  # the installed copy, not ROOT
    env = _clean_env(HOME=str(world["tmp"]), GITHUB_TOKEN=fake.token,  # type: ignore[attr-defined]
                     GITHUB_API_URL=fake.url)  # type: ignore[attr-defined]
    ixtool = str(pip_venv / "bin" / "ixtool")
    row = ""
    problems = []
    for name, argv, codes in COMMANDS:
        argv = [a.replace("{row}", row).replace("{tmp}", str(tmp)) for a in argv]
        t = time.perf_counter()
        proc = subprocess.run([ixtool, *argv], cwd=user, env=env, capture_output=True,
                              text=True, check=False, timeout=900)
        TIMES[f"ixtool {name}"] = time.perf_counter() - t
        text = proc.stdout + proc.stderr
        if (proc.returncode not in codes or "internal error" in text or "Traceback" in text
                or "ModuleNotFoundError" in text):
            problems.append(f"ixtool {' '.join(argv)}: exit {proc.returncode} "
                            f"(expected {sorted(codes)})\n{text[-3000:]}")
        if name == "ci shards" and proc.returncode == 0:
            row = _first_row(proc.stdout)
    assert not problems, "\n\n".join(problems)


def _first_row(shards: str) -> str:
    """The id of the first row handle ``ci shards`` printed (``shard-1=[{"id": …}]``)."""
    for line in shards.splitlines():
        if line.startswith("shard-1="):
            return str(json.loads(line.split("=", 1)[1])[0]["id"])
    raise AssertionError(f"no shard-1 in {shards!r}")


# --------------------------------------------------------------- (c) pre-commit


def _hook_repo(dest: Path) -> Path:
    """This checkout as a pre-commit hook repository (its tracked and untracked files,
    committed once, so every try-repo uses the same revision and one environment)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    dest.mkdir()
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "ixtool")
    return dest


def _pre_commit() -> str:
    exe = shutil.which("pre-commit", path=str(Path(sys.executable).parent))
    assert exe, "pre-commit is a test dependency"
    return exe


def test_pre_commit_hooks_on_a_recipe_commit(seed: SeedPR, tmp_path: Path) -> None:
    hooks = _hook_repo(tmp_path / "hooks")
    project = tmp_path / "project"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(seed.tree), str(project)],
                   env=GIT_ENV, check=True)
    git(project, "remote", "remove", "origin")
    # the commit being made: the seed PR's recipe change and its entry (staged)
    for rel in ("configs/nvidia-master.yaml", "perf-changelog.yaml"):
        (project / rel).write_text(git(seed.tree, "show", f"{seed.fixed}:{rel}"))
    git(project, "add", "-A")
    env = _clean_env(HOME=str(tmp_path), PRE_COMMIT_HOME=str(tmp_path / "pc-home"),
                     NO_COLOR="1")
    env["PATH"] = f"{Path(_pre_commit()).parent}{os.pathsep}{env['PATH']}"

    def try_repo(*hook: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([_pre_commit(), "try-repo", str(hooks), *hook, "--verbose",
                               "--color", "never"], cwd=project, env=env, capture_output=True,
                              text=True, check=False, timeout=1800)

    def status(proc: subprocess.CompletedProcess[str], name: str) -> str:
        m = re.search(rf"^ixtool {name}\.+(Passed|Failed)$", proc.stdout, re.M)
        assert m, proc.stdout + proc.stderr
        return m.group(1)

    t = time.perf_counter()
    good = try_repo()
    TIMES["pre-commit: hook environment + three hooks"] = time.perf_counter() - t
    out = good.stdout + good.stderr
    assert "internal error" not in out and "Traceback" not in out, out
    assert good.returncode == 0, out
    for name in ("changelog validate", "config validate", "policy check"):
        assert status(good, name) == "Passed"
    assert "what the commit changes against HEAD" in good.stdout  # not the real tree's

    # the same commit with a placeholder link and an AL the golden curve does not give
    changelog = project / "perf-changelog.yaml"
    changelog.write_text(changelog.read_text().replace(PR_URL, "TBD"))
    script = project / SCRIPT
    script.write_text(script.read_text().replace("SYNTHETIC_ACCEPT_LEN=2.78",
                                                 "SYNTHETIC_ACCEPT_LEN=2.50"))
    git(project, "add", "-A")
    t = time.perf_counter()
    bad = try_repo()
    TIMES["pre-commit: three hooks"] = time.perf_counter() - t
    assert status(bad, "changelog validate") == "Failed"
    assert re.search(r"error \[CL50\d\]", bad.stdout), bad.stdout
    assert status(bad, "config validate") == "Passed"  # findings already there
    assert status(bad, "policy check") == "Failed"
    assert re.search(r"error \[PO\d+\].*2\.5", bad.stdout), bad.stdout
