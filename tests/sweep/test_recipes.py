"""Multinode recipe sources learned from the launchers (sweep/recipes.py) and their use
by ``ixtool config validate`` (SW404 errors, SW407 notes), on synthetic launchers and on
the real tree."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.sweep.recipes import (
    Lookup,
    applicable,
    follow_git_symlinks,
    learn,
    lookup,
)

LAUNCHER = r'''#!/bin/bash
UPSTREAM_URL="https://example.invalid/org/recipes-upstream.git"
_REL="${CONFIG_FILE%%:*}"
_SRC="$GITHUB_WORKSPACE/benchmarks/multi_node/vendor-recipes/${_REL#recipes/}"
if [[ $FRAMEWORK == "dynamo-alpha" && $MODEL_PREFIX == "m1" ]]; then
    git clone --branch v1.2 --single-branch "$UPSTREAM_URL" "$DIR" || exit 1
    cd "$DIR"
    DEST="recipes/alpha/m1"
    mkdir -p "$DEST"
    cp -rT "$GITHUB_WORKSPACE/benchmarks/multi_node/vendor-recipes/alpha/m1-src" \
        "$DEST"
elif [[ $FRAMEWORK == "dynamo-beta" ]]; then
    git clone https://example.invalid/org/recipes-upstream.git "$DIR"
    cd "$DIR"
    git checkout 0123abcd
else
    echo "git clone attempt failed"   # not a clone
    git clone https://example.invalid/other/fork.git "$DIR"
fi
'''

HELPER = 'RECIPE="${REPO_ROOT}/benchmarks/multi_node/side-recipes/${CONFIG_FILE}"\n'


def _sources() -> object:
    return learn({"runners/launch_x-y.sh": LAUNCHER, "benchmarks/multi_node/z/run.sh": HELPER})


def test_learn_overlays_folders_and_clones() -> None:
    s = learn({"runners/launch_x-y.sh": LAUNCHER, "benchmarks/multi_node/z/run.sh": HELPER})
    assert s.overlays == [("recipes/alpha/m1", "benchmarks/multi_node/vendor-recipes/alpha/m1-src")]
    assert set(s.folders) == {("recipes", "benchmarks/multi_node/vendor-recipes"),
                              ("", "benchmarks/multi_node/side-recipes")}
    clones = s.clones["runners/launch_x-y.sh"]
    assert [c.describe() for c in clones] == [
        "https://example.invalid/org/recipes-upstream.git at v1.2",
        "https://example.invalid/org/recipes-upstream.git at 0123abcd",
        "https://example.invalid/other/fork.git (default branch)"]
    assert clones[0].conditions == (("FRAMEWORK", "==", "dynamo-alpha"),
                                    ("MODEL_PREFIX", "==", "m1"))
    assert clones[2].conditions == ()
    # the overlay copies into "$DIR" (after `cd "$DIR"`), where every clone checks out
    assert [c.dir for c in clones] == ["$DIR"] * 3
    assert s.into == {s.overlays[0]: clones}


@pytest.mark.parametrize(("recipe", "files", "status"), [
    # under an overlay: the vendored source must have it
    ("recipes/alpha/m1/a.yaml", {"benchmarks/multi_node/vendor-recipes/alpha/m1-src/a.yaml"},
     "found"),
    ("recipes/alpha/m1/a.yaml", {"benchmarks/multi_node/vendor-recipes/alpha/m1/a.yaml"},
     "missing"),
    # a vendored folder, with and without the recipes/ prefix, and a repository path
    ("recipes/gamma/b.yaml", {"benchmarks/multi_node/vendor-recipes/gamma/b.yaml"}, "found"),
    ("c.yaml", {"benchmarks/multi_node/side-recipes/c.yaml"}, "found"),
    ("benchmarks/multi_node/vendor-recipes/d.yaml",
     {"benchmarks/multi_node/vendor-recipes/d.yaml"}, "found"),
    # nowhere in the repository: only the clone can have it
    ("recipes/upstream/e.yaml", set(), "external"),
])
def test_lookup(recipe: str, files: set[str], status: str) -> None:
    s = learn({"runners/launch_x-y.sh": LAUNCHER, "benchmarks/multi_node/z/run.sh": HELPER})
    assert lookup(recipe, s, files.__contains__).status == status


def test_lookup_under_an_overlay_onto_a_clone_of_the_row_is_external() -> None:
    """A recipe the vendored copy lacks, under an overlay copied into a checkout: read
    from that checkout when its clone applies to the row; missing when none does."""
    s = learn({"runners/launch_x-y.sh": LAUNCHER})
    row = applicable(s.clones["runners/launch_x-y.sh"],
                     {"FRAMEWORK": "dynamo-alpha", "MODEL_PREFIX": "m1"})
    absent = set[str]().__contains__
    assert lookup("recipes/alpha/m1/a.yaml", s, absent, row) == Lookup(
        "external", ("benchmarks/multi_node/vendor-recipes/alpha/m1-src/a.yaml",))
    assert lookup("recipes/alpha/m1/a.yaml", s, absent).status == "missing"
    other = learn({"runners/launch_o.sh": LAUNCHER})  # the same clone, another script
    assert lookup("recipes/alpha/m1/a.yaml", s, absent,
                  other.clones["runners/launch_o.sh"]).status == "missing"


_OVERLAY = ('cp -rT "$GITHUB_WORKSPACE/benchmarks/multi_node/vendor-recipes/alpha/m1-src"'
            ' recipes/alpha/m1')


@pytest.mark.parametrize(("script", "inside"), [
    # the #1391 shape: clone, cd into it, overlay a relative dest
    (f'git clone https://x.invalid/u.git "$D"\ncd "$D"\n{_OVERLAY}\n', True),
    (f'git clone https://x.invalid/u.git "$D" || exit 1\ncd "$D" || exit 1\n{_OVERLAY}\n',
     True),
    (f'git clone https://x.invalid/u.git "$D"\ncd "$D" && {_OVERLAY}\n', True),
    (f'git clone https://x.invalid/u.git "$D"\ncd "$D"\ncd sub\n{_OVERLAY}\n', True),
    (f'git clone https://x.invalid/u.git\ncd u\n{_OVERLAY}\n', True),  # git's default dir
    (f'D="srt"\ngit clone https://x.invalid/u.git "$D"\ncd srt\n{_OVERLAY}\n', True),
    # the overlay is made outside every checkout
    (f'{_OVERLAY}\ngit clone https://x.invalid/u.git "$D"\ncd "$D"\n', False),
    (f'git clone https://x.invalid/u.git "$D"\ncd "$D"\ncd "$GITHUB_WORKSPACE"\n{_OVERLAY}\n',
     False),
    (f'git clone https://x.invalid/u.git "$D"\ncd "$E"\n{_OVERLAY}\n', False),
    (f'git clone https://x.invalid/u.git "$D"\ncd "$D"\ncd -\n{_OVERLAY}\n', False),
    (f'cd "$D"\n{_OVERLAY}\n', False),  # no clone at all
])
def test_overlay_checkout_is_told_by_the_cd_lines(script: str, inside: bool) -> None:
    s = learn({"runners/launch_a.sh": script})
    assert s.overlays == [("recipes/alpha/m1",
                           "benchmarks/multi_node/vendor-recipes/alpha/m1-src")]
    assert bool(s.into) is inside


def test_lookup_without_any_clone_is_unknown() -> None:
    s = learn({"benchmarks/multi_node/z/run.sh": HELPER})
    assert lookup("recipes/upstream/e.yaml", s, set().__contains__).status == "unknown"


@pytest.mark.parametrize(("known", "want"), [
    ({"FRAMEWORK": "dynamo-alpha", "MODEL_PREFIX": "m1"}, ["at v1.2"]),
    ({"FRAMEWORK": "dynamo-beta", "MODEL_PREFIX": "m1"}, ["at 0123abcd"]),
    ({"FRAMEWORK": "dynamo-gamma", "MODEL_PREFIX": "m1"}, ["fork.git (default branch)"]),
])
def test_applicable_clone_follows_the_row(known: dict[str, str], want: list[str]) -> None:
    s = learn({"runners/launch_x-y.sh": LAUNCHER})
    got = applicable(s.clones["runners/launch_x-y.sh"], known)
    assert [c.describe().split("/")[-1] for c in got] == [
        w if w.startswith("fork") else "recipes-upstream.git " + w for w in want]


def test_git_symlink_blobs_are_followed() -> None:
    got = follow_git_symlinks({"runners/launch_a.sh": "launch_b.sh",
                               "runners/launch_b.sh": "echo real\n"})
    assert got["runners/launch_a.sh"] == "echo real\n"


CONFIG = '''m1-fp4-x-alpha:
  image: img:1
  model: org/m1
  model-prefix: m1
  runner: lbl
  precision: fp4
  framework: {fw}
  multinode: true
  disagg: true
  kv-p2p-transfer: nixl
  scenarios:
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - conc-list: [1]
        prefill:
          num-worker: 1
          tp: 4
          ep: 1
          dp-attn: false
          additional-settings:
          - "CONFIG_FILE={recipe}"
        decode:
          num-worker: 1
          tp: 4
          ep: 1
          dp-attn: false
'''


def _repo(tmp_path: Path, fw: str, recipe: str, vendored: list[str],
          launcher: str = LAUNCHER) -> Path:
    root = tmp_path / "repo"
    (root / "configs").mkdir(parents=True)
    (root / "runners").mkdir()
    (root / "configs/x-master.yaml").write_text(CONFIG.format(fw=fw, recipe=recipe))
    (root / "configs/runners.yaml").write_text("labels:\n  lbl:\n    - x-y_0\n")
    (root / "runners/launch_x-y.sh").write_text(launcher)
    for v in vendored:
        p = root / v
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("name: r\n")
    (root / "benchmarks/single_node").mkdir(parents=True)
    return root


def _validate(root: Path) -> tuple[int, list[dict[str, object]]]:
    proc = subprocess.run([sys.executable, "-m", "inferencex_tools", "config", "validate",
                           "--format", "json"], cwd=root, capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def test_external_recipe_is_a_note_naming_the_source(tmp_path: Path) -> None:
    root = _repo(tmp_path, "dynamo-beta", "recipes/upstream/e.yaml", [])
    rc, findings = _validate(root)
    assert rc == 0
    assert [(f["rule"], f["severity"]) for f in findings] == [("SW407", "note")]
    msg = str(findings[0]["message"])
    assert "https://example.invalid/org/recipes-upstream.git at 0123abcd" in msg
    assert "runners/launch_x-y.sh" in msg


def test_overlay_onto_a_clone_checkout_lacking_the_recipe_is_a_note(tmp_path: Path) -> None:
    """The launcher clones, cds into the checkout and overlays the vendored copy onto
    it (InferenceX #1391's gb200 dynamo-vllm dsv4 branch): the overlay removes nothing,
    so a recipe the vendored copy lacks is read from the checkout: SW407, not SW404."""
    root = _repo(tmp_path, "dynamo-alpha", "recipes/alpha/m1/a.yaml",
                 ["benchmarks/multi_node/vendor-recipes/alpha/m1-src/other.yaml"])
    rc, findings = _validate(root)
    assert rc == 0
    assert [(f["rule"], f["severity"]) for f in findings] == [("SW407", "note")]
    msg = str(findings[0]["message"])
    assert "recipes/alpha/m1/a.yaml" in msg
    assert "https://example.invalid/org/recipes-upstream.git at v1.2" in msg
    assert "runners/launch_x-y.sh:6" in msg


# Overlays no checkout of a clone for the row receives: the vendored copy is the only source.
_CLONE_ALPHA = (
    'if [[ $FRAMEWORK == "dynamo-alpha" && $MODEL_PREFIX == "m1" ]]; then\n'
    '    git clone --branch v1.2 https://example.invalid/org/recipes-upstream.git "$DIR"\n')
_COPY = ('mkdir -p recipes/alpha/m1\n'
         'cp -rT "$GITHUB_WORKSPACE/benchmarks/multi_node/vendor-recipes/alpha/m1-src" '
         'recipes/alpha/m1\n')
OUTSIDE = {
    # made in the workspace, before the launcher enters its checkout
    "before-cd": _CLONE_ALPHA + _COPY + 'cd "$DIR"\nfi\n',
    # the launcher leaves the checkout before overlaying
    "left-checkout": _CLONE_ALPHA + 'cd "$DIR"\ncd "$GITHUB_WORKSPACE"\n' + _COPY + "fi\n",
    # in the checkout of a clone no dynamo-delta row makes (and no unguarded clone)
    "clone-of-no-row": _CLONE_ALPHA + 'cd "$DIR"\nfi\n' + _COPY,
}


@pytest.mark.parametrize("variant", sorted(OUTSIDE))
def test_overlay_outside_any_row_clone_checkout_lacking_the_recipe_is_an_error(
        tmp_path: Path, variant: str) -> None:
    fw = "dynamo-delta" if variant == "clone-of-no-row" else "dynamo-alpha"
    root = _repo(tmp_path, fw, "recipes/alpha/m1/a.yaml",
                 ["benchmarks/multi_node/vendor-recipes/alpha/m1-src/other.yaml"],
                 OUTSIDE[variant])
    rc, findings = _validate(root)
    assert rc == 1
    assert [f["rule"] for f in findings] == ["SW404"]
    assert "vendor-recipes/alpha/m1-src/a.yaml" in str(findings[0]["message"])


@pytest.mark.parametrize("variant", ["clone-checkout", *sorted(OUTSIDE)])
def test_overlaid_recipe_present_is_clean(tmp_path: Path, variant: str) -> None:
    fw = "dynamo-delta" if variant == "clone-of-no-row" else "dynamo-alpha"
    root = _repo(tmp_path, fw, "recipes/alpha/m1/a.yaml",
                 ["benchmarks/multi_node/vendor-recipes/alpha/m1-src/a.yaml"],
                 OUTSIDE.get(variant, LAUNCHER))
    assert _validate(root) == (0, [])


def test_real_tree_config_validate_reports_exactly_the_true_findings(real_tree: Path) -> None:
    rc, findings = _validate(real_tree)
    assert rc == 1
    counts = collections.Counter((f["rule"], f["severity"]) for f in findings
                                 if f["severity"] != "note")
    assert counts == {("SW403", "error"): 1, ("SW401", "warning"): 8, ("SW406", "warning"): 2}
    errors = sorted(str(f["message"]).split(":")[0] for f in findings
                    if f["severity"] == "error")
    assert errors == ["qwen3.5-fp8-h100-sglang-agentic"]
    notes = [f for f in findings if f["severity"] == "note"]
    assert len(notes) == 22 and all(f["rule"] == "SW407" for f in notes)
    assert all("github.com/" in str(f["message"]) for f in notes)
    # its 2 unvendored disagg-gb300-*-agentic recipes: the gb300 launcher overlays the
    # vendored agentic folder onto its srt-slurm checkout, which is where they come from
    agentic = [str(f["message"]) for f in notes
               if str(f["message"]).startswith("dsv4-fp4-gb300-dynamo-vllm-agentic:")]
    assert len(agentic) == 1 and agentic[0].split(":")[1].startswith(
        " 2 agentic-coding recipes (e.g. recipes/vllm/deepseek-v4/agentic/disagg-gb300-")


# --- learn's cost: no pattern per variable name (issue 35), the same results ---------

def _launch_scripts_at(repo: Path, rev: str) -> dict[str, str]:
    """The scripts :func:`learn` reads (``runners/*.sh``, ``benchmarks/multi_node/**``) at
    ``rev``, as the gate reads them: git blobs, symlinks followed."""
    from inferencex_tools.sweep.recipes import is_launch_script

    names = [p for p in subprocess.run(["git", "ls-tree", "-r", "--name-only", rev],
                                       cwd=repo, capture_output=True, text=True,
                                       check=True).stdout.splitlines()
             if is_launch_script(p)]
    blobs = subprocess.run(["git", "cat-file", "--batch"], cwd=repo, check=True,
                           capture_output=True,
                           input="".join(f"{rev}:{p}\n" for p in names).encode()).stdout
    out: dict[str, str] = {}
    at = 0
    for p in names:
        header_end = blobs.index(b"\n", at)
        size = int(blobs[at:header_end].split()[2])
        out[p] = blobs[header_end + 1:header_end + 1 + size].decode(errors="replace")
        at = header_end + 1 + size + 1
    return follow_git_symlinks(out)


def _per_name_config_vars(lines: list[tuple[int, str]]) -> set[str]:
    """The meaning of ``_config_vars``, spelled as a pattern per name (the code before)."""
    import re

    from inferencex_tools.sweep.recipes import _ASSIGN

    names = {"CONFIG_FILE"}
    for _ in range(3):
        for _, ln in lines:
            m = _ASSIGN.match(ln)
            if m and any(re.search(r"\$\{?" + n + r"\b", m.group(2)) for n in names):
                names.add(m.group(1))
    return names


def _per_name_literal_value(name: str, rhs: str) -> str | None:
    import re

    from inferencex_tools.sweep.recipes import _unquote

    val = _unquote(rhs.split(" #", 1)[0])
    dm = re.fullmatch(r"\$\{" + re.escape(name) + r":-([^}]*)\}", val)
    if dm:
        val = dm.group(1)
    if "$" in val or "`" in val or " " in val:
        return None
    return val


def test_learn_gives_what_a_pattern_per_name_gives(real_tree: Path, full_history: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The real tree's launchers and those of 12 snapshots of the history: learn's
    overlays, folders and clones are the same with the per-name definitions."""
    from inferencex_tools.sweep import recipes

    revs = subprocess.run(["git", "log", "--first-parent", "--format=%H", "HEAD", "--",
                           "runners", "benchmarks/multi_node"], cwd=full_history,
                          capture_output=True, text=True, check=True).stdout.split()
    trees = [_launch_scripts_at(real_tree, "HEAD")]
    trees += [_launch_scripts_at(full_history, r) for r in revs[::max(1, len(revs) // 12)]]
    fast = [learn(t) for t in trees]
    monkeypatch.setattr(recipes, "_config_vars", _per_name_config_vars)
    monkeypatch.setattr(recipes, "_literal_value", _per_name_literal_value)
    slow = [learn(t) for t in trees]
    assert sum(len(t) for t in trees) > 300 and any(s.folders for s in slow)
    assert fast == slow


def test_learn_compiles_no_pattern_per_variable_name(real_tree: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """On the real tree the old learn compiled ~770 patterns on every call (more than
    re's cache holds); now a pattern per set of names a launcher derives from
    CONFIG_FILE, once per process."""
    import re

    from inferencex_tools.sweep import recipes

    scripts = _launch_scripts_at(real_tree, "HEAD")
    compiled: list[object] = []
    real = re._compiler.compile  # type: ignore[attr-defined]

    def counting(p: object, flags: int = 0) -> object:
        compiled.append(p)
        return real(p, flags)

    monkeypatch.setattr(re._compiler, "compile", counting)  # type: ignore[attr-defined]
    re.purge()
    if hasattr(recipes, "_folder_pattern"):
        recipes._folder_pattern.cache_clear()
    name_sets = {tuple(sorted(recipes._config_vars(recipes._logical_lines(t))))
                 for t in scripts.values()}
    del compiled[:]
    learn(scripts)
    first = len(compiled)
    learn(scripts)
    assert len(scripts) > 50
    assert first <= len(name_sets) < 10, (first, name_sets)
    assert len(compiled) == first
