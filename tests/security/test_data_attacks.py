"""Security issue #18, items 1, 8, 10, 11: hostile data outside the trace sandbox.

Each test rebuilds the attack's proof of concept (in a temporary repository where the
attack needs one) and checks the defence: paths from data stay in their folder, row
text cannot leave its script line, hostile values end as clean findings/errors, PR
numbers are canonical.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.errors import LimitExceeded, UsageError
from inferencex_tools.io.yamlio import load_rt, load_safe
from inferencex_tools.policy.engines import facts_of
from inferencex_tools.policy.resolve import Row, resolve_script
from inferencex_tools.sandbox import Record
from inferencex_tools.schemas import schema_issues
from tests.conftest import TempRepo
from tests.reliability.helpers import ixtool

# ------------------------------------------------------------------ item 1: containment

CONFIG = """\
{key}:
  image: img
  model: org/model
  model-prefix: {prefix}
  precision: fp8
  framework: vllm
  runner: h100
  multinode: false
  scenarios:
    fixed-seq-len:
      - isl: 1024
        osl: 1024
        search-space:
          - {{ tp: 8, conc-start: 4, conc-end: 4 }}
"""


def test_config_validate_flags_the_traversing_model_prefix(temp_repo: TempRepo) -> None:
    """The PoC config: model-prefix with ../ (plus a committed directory link) that made
    the sandbox setup write a PR file to a host path ending in .sh."""
    temp_repo.write("configs/evil-master.yaml",
                    CONFIG.format(key="dsr1-fp8-h100-vllm", prefix="../../../../etc/profile.d/x"))
    os.symlink("/etc", temp_repo.path / "configs" / "etc-link")
    temp_repo.commit()
    r = ixtool("config", "validate", "--format", "json", cwd=temp_repo.path)
    r.assert_clean_exit()
    assert r.code == 1, r.out
    found = [f for f in r.json()["findings"] if f["rule"] == "SW106"]
    assert found and "model-prefix" in found[0]["message"] and found[0]["line"] == 4, r.out


@pytest.mark.parametrize(("field", "value", "ok"), [
    ("model-prefix", "dsr1", True), ("model-prefix", "../x", False),
    ("model-prefix", "a/b", False), ("model-prefix", "..", False),
    ("model-prefix", "a\\b", False), ("model-prefix", "x\n", False),
    ("precision", "fp8", True), ("precision", "fp8/..", False), ("precision", "fp8\x1b", False),
    ("framework", "vllm", True), ("framework", "vllm\u2028", False),
    ("framework", ".", False), ("framework", "sglang-disagg", True),
])
def test_schema_name_fields_exclude_separators_and_controls(field: str, value: str,
                                                            ok: bool) -> None:
    cfg: dict[str, Any] = {"image": "i", "model": "m", "model-prefix": "dsr1",
                           "precision": "fp8", "framework": "vllm", "runner": "h100",
                           "multinode": False, "scenarios": {}}
    cfg[field] = value
    bad = [i for i in schema_issues("master-config", {"k": cfg}) if i.path[-1:] == (field,)]
    assert (not bad) is ok, bad


@pytest.mark.parametrize(("key", "ok"), [
    ("dsr1-fp8-h100-vllm", True), ("a/b", False), ("..", False), ("a\nb", False),
    ("a\\b", False), ("k\x00", False), ("a*b", False), ("a.b", True),
])
def test_schema_config_keys_exclude_separators_and_controls(key: str, ok: bool) -> None:
    cfg = {"image": "i", "model": "m", "model-prefix": "dsr1", "precision": "fp8",
           "framework": "vllm", "runner": "h100", "multinode": False, "scenarios": {}}
    bad = [i for i in schema_issues("master-config", {key: cfg}) if not i.path]
    assert (not bad) is ok, bad


def _row(prefix: str) -> Row:
    cfg = {"image": "img", "model": "m", "model-prefix": prefix, "precision": "fp8",
           "framework": "vllm", "runner": "h100", "multinode": False}
    return Row(config_file="configs/t-master.yaml", key="k", key_line=None,
               scenario="fixed-seq-len", item_index=0, entry_index=0, conc=4,
               eval_only=False, config=cfg, entry={"tp": 8}, seq={"isl": 1024, "osl": 1024})


def _launcher(root: Path) -> None:
    (root / "runners").mkdir(parents=True, exist_ok=True)
    (root / "runners" / "launch_h100-x.sh").write_text("#!/bin/bash\n")


def test_benchmark_script_out_of_its_folder_is_refused(tmp_path: Path) -> None:
    """model-prefix ../…: the script candidate exists, but outside benchmarks/single_node."""
    root = tmp_path / "repo"
    _launcher(root)
    (root / "benchmarks/single_node/fixed_seq_len").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x_fp8_h100_vllm.sh").write_text("echo host\n")
    res = resolve_script(root, _row("../../../../outside/x"), "h100-x")
    assert res.script is None and res.why and "plain path" in res.why, res


def test_symlinked_folder_and_recipe_are_refused(tmp_path: Path) -> None:
    """A committed directory link (and a script that is a link to a host file)."""
    root = tmp_path / "repo"
    _launcher(root)
    (root / "benchmarks/single_node").mkdir(parents=True)
    host = tmp_path / "host"
    host.mkdir()
    (host / "dsr1_fp8_h100.sh").write_text("echo host\n")
    os.symlink(host, root / "benchmarks/single_node/fixed_seq_len")
    res = resolve_script(root, _row("dsr1"), "h100-x")
    assert res.script is None and res.why and "symbolic link" in res.why, res
    os.unlink(root / "benchmarks/single_node/fixed_seq_len")
    (root / "benchmarks/single_node/fixed_seq_len").mkdir()
    os.symlink(host / "dsr1_fp8_h100.sh",
               root / "benchmarks/single_node/fixed_seq_len/dsr1_fp8_h100.sh")
    res = resolve_script(root, _row("dsr1"), "h100-x")
    assert res.script is None and res.why and "symbolic link" in res.why, res


def test_launcher_alias_inside_runners_is_kept(tmp_path: Path) -> None:
    """The real tree's runners/launch_b200-dgxc-slurm.sh -> launch_b200-dgxc.sh stays
    usable; a node name with a separator or a link out of runners/ does not."""
    from inferencex_tools.io.files import PathRefused, contained

    root = tmp_path / "repo"
    _launcher(root)
    os.symlink("launch_h100-x.sh", root / "runners" / "launch_h100-y.sh")
    assert contained(root, "runners/launch_h100-y.sh", "runners", leaf_link_ok=True).is_file()
    os.symlink("/etc/passwd", root / "runners" / "launch_h100-z.sh")
    with pytest.raises(PathRefused):
        contained(root, "runners/launch_h100-z.sh", "runners", leaf_link_ok=True)
    with pytest.raises(PathRefused):
        contained(root, "runners/launch_../../etc/x.sh", "runners")
    with pytest.raises(PathRefused):
        contained(root, "benchmarks/x.sh", "runners")


# ------------------------------------------------------------------ item 8: sbatch injection

SEED_KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"
ROOT = Path(__file__).resolve().parents[2]


def _submit(*args: str, cwd: Path) -> Any:
    return ixtool("launch", "submit", "--root", str(ROOT), "--no-check", "--dry-run",
                  "--out-dir", str(cwd / "jobs"), *args, cwd=cwd)


_SEED_ROW: dict[str, Any] = {}  # rendered once per session; each test edits its own copy


def _seed_row(tmp_path: Path) -> dict[str, Any]:
    if not _SEED_ROW:
        r = ixtool("launch", "render", "--root", str(ROOT), "--config-key", SEED_KEY, "--arm",
                   "1", "--format", "json", cwd=tmp_path)
        rows = [j["row"] for j in r.json()["info"]["jobs"]] if r.code in (0, 1) else []
        if not rows:
            pytest.skip(f"seed row not renderable here: {r.err[-300:]}")
        _SEED_ROW.update(rows[0])
    return dict(_SEED_ROW)


@pytest.mark.parametrize("field", ["exp-name", "model", "image"])
def test_newline_in_a_row_string_cannot_break_out_of_the_script(tmp_path: Path,
                                                                field: str) -> None:
    """PoC: exp-name 'x<newline>touch PWNED #' ended the #SBATCH line and ran touch."""
    row = _seed_row(tmp_path)
    row[field] = f"{row[field]}\ntouch {tmp_path}/PWNED #"
    r = _submit("--row", json.dumps(row), cwd=tmp_path)
    r.assert_clean_exit()
    assert r.code == 2 and "control character" in r.err, (r.code, r.err[-500:])
    assert not any(line.startswith("touch") for line in r.out.splitlines()), r.out


def test_newline_in_a_config_key_cannot_break_out_of_the_script(tmp_path: Path) -> None:
    """The config key is rendered into the script's header comment."""
    import shutil

    repo = tmp_path / "repo"
    for d in ("configs", "runners", "benchmarks"):
        shutil.copytree(ROOT / d, repo / d)
    master = repo / "configs" / "nvidia-master.yaml"
    text = master.read_text()
    evil = f"{SEED_KEY}\ntouch {tmp_path}/PWNED #"
    master.write_text(re.sub(rf"(?m)^{re.escape(SEED_KEY)}:", lambda _: json.dumps(evil) + ":",
                             text, count=1))
    r = ixtool("launch", "submit", "--root", str(repo), "--no-check", "--dry-run",
               "--config-key", evil, "--arm", "1", "--out-dir", str(tmp_path / "jobs"),
               cwd=tmp_path)
    r.assert_clean_exit()
    assert r.code == 2 and "control character" in r.err, (r.code, r.err[-500:])
    assert not any(line.startswith("touch") for line in r.out.splitlines()), r.out


def test_job_names_go_through_the_safe_name_function(tmp_path: Path) -> None:
    row = _seed_row(tmp_path)
    row["exp-name"] = row["exp-name"].split("_", 1)[0] + "_a b;$(id)`x`'q"
    r = _submit("--row", json.dumps(row), "--format", "json", cwd=tmp_path)
    assert r.code in (0, 1), r.err[-500:]
    script = r.json()["info"]["jobs"][0]["sbatch"]
    assert f"#SBATCH --job-name={row['exp-name'].split('_', 1)[0]}_a_b_id_x_q\n" in script, script


# ------------------------------------------------------------------ item 10: crashes

def test_huge_hex_pr_link_is_a_clean_finding(temp_repo: TempRepo) -> None:
    """PoC: pr-link: 0x + 20,000 hex digits — jsonschema's message formatting raised."""
    temp_repo.write("perf-changelog.yaml",
                    "- config-keys:\n    - a\n  description:\n    - x\n"
                    f"  pr-link: 0x{'a' * 20000}\n")
    temp_repo.commit()
    r = ixtool("changelog", "validate", "--format", "json", cwd=temp_repo.path)
    r.assert_clean_exit()
    assert r.code == 1 and "20,000 digits" in r.out, (r.code, r.out[-500:], r.err[-500:])


@pytest.mark.parametrize("text", [f"a: 0x{'f' * 20000}\n", f"a: {'9' * 5000}\n",
                                  f"a: [0b{'1' * 3000}]\n", f"a: -{'7' * 2500}\n"])
@pytest.mark.parametrize("load", [load_safe, load_rt])
def test_integers_over_the_digit_limit_are_refused_at_load(text: str, load: Any) -> None:
    with pytest.raises(LimitExceeded) as exc:
        load(text, source="t.yaml")
    assert "digits" in exc.value.detail and exc.value.line == 1


def test_integers_under_the_limit_still_load() -> None:
    assert load_safe(f"a: 0x{'f' * 100}\nb: 12_345\n") == {"a": int("f" * 100, 16), "b": 12345}


def test_schema_messages_are_bounded() -> None:
    from inferencex_tools.schemas import short_repr

    entry = {"config-keys": ["a"], "description": ["x"], "pr-link": "y" * 1_000_000,
             "evals-only": "z" * 500_000}
    issues = schema_issues("perf-changelog", [entry])
    assert issues and all(len(i.message) < 2000 for i in issues), [len(i.message) for i in issues]
    assert short_repr(1 << 100_000).startswith("<integer of")


def _vllm(spec: str) -> Any:
    rec = Record(tool="vllm", argv=("vllm", "serve", "m", "--speculative-config", spec),
                 env={}, cwd="/", files={}, seq=1)
    return facts_of(rec, "vllm")


@pytest.mark.parametrize("spec", [
    '{"method": ["eagle3"], "model": "d", "num_speculative_tokens": 3}',
    '{"method": "eagle3", "num_speculative_tokens": [[3]], "synthetic_acceptance_length": {}}',
    '{"method": {"x": 1}, "rejection_sample_method": "synthetic", '
    '"synthetic_acceptance_rates": [' + ",".join(["0.5"] * 10000) + "]}",
    "[" * 50_000 + "]" * 50_000,
    '{"a":' * 50_000 + "1" + "}" * 50_000,
    '["eagle3"]',
    "1" * 5000,
])
def test_hostile_speculative_config_is_an_issue_not_a_crash(spec: str) -> None:
    """PoC: a list where a string is expected, or JSON nested 50,000 deep."""
    f = _vllm(spec)
    assert f.issues, f
    assert all(len(i) < 1000 for i in f.issues)


def test_a_typed_speculative_config_still_reads() -> None:
    f = _vllm('{"method": "eagle3", "model": "d", "num_speculative_tokens": 3, '
              '"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5}')
    assert (f.method, f.draft, f.k, f.al, f.issues) == ("eagle3", "d", 3, 2.5, [])


def test_bounded_json() -> None:
    from inferencex_tools.safetext import bounded_json

    assert bounded_json('{"a": [1, {"b": "[[["}]}') == {"a": [1, {"b": "[[["}]}
    for bad in ("[" * 40 + "]" * 40, "x" * 10, " " * (2 << 20)):
        with pytest.raises(ValueError):
            bounded_json(bad)


def test_launch_render_json_flag_is_bounded() -> None:
    from inferencex_tools.launch.render import json_flag

    assert json_flag(["--speculative-config", "[" * 50_000 + "]" * 50_000],
                     "--speculative-config") is None


# ------------------------------------------------------------------ item 11: PR numbers

@pytest.mark.parametrize("num", ["0", "007", "9" * 5000, "+7", "1_0"])
def test_main_mode_refuses_non_canonical_pr_links(num: str) -> None:
    from inferencex_tools.changelog.links import check_new_link, is_canonical

    link = f"https://github.com/o/r/pull/{num}"
    assert not is_canonical(link, "o/r")
    assert not check_new_link(link, "o/r", None).ok
    assert is_canonical("https://github.com/o/r/pull/7", "o/r")


def test_main_mode_changelog_validate_flags_pull_007(temp_repo: TempRepo) -> None:
    entry = ("- config-keys:\n    - a\n  description:\n    - x\n"
             "  pr-link: https://github.com/o/r/pull/{n}\n")
    temp_repo.write("perf-changelog.yaml", entry.format(n=1))
    temp_repo.commit()
    temp_repo.git("branch", "base")
    temp_repo.write("perf-changelog.yaml", entry.format(n=1) + "\n" + entry.format(n="007"))
    temp_repo.commit()
    r = ixtool("changelog", "validate", "--base", "base", "--head", "HEAD", "--repo", "o/r",
               "--format", "json", cwd=temp_repo.path)
    r.assert_clean_exit()
    assert r.code == 1 and r.rules == {"CL501", "CL603"}, (r.code, r.out[-800:], r.err[-300:])


@pytest.mark.parametrize("args", [
    ["changelog", "validate", "--pr", "007"],
    ["changelog", "validate", "--pr", "0"],
    ["changelog", "validate", "--pr", "9" * 5000],
    ["changelog", "canonicalize", "--pr", "+7"],
    ["ci", "priority", "--pr-number", "007"],
    ["ci", "priority", "--pr-number", "9" * 5000],
    ["ci", "gate", "--base", "HEAD", "--pr", "007"],
])
def test_pr_number_options_are_canonical(args: list[str], tmp_path: Path) -> None:
    r = ixtool(*args, cwd=tmp_path)
    r.assert_clean_exit()
    assert r.code == 2 and "not a PR number" in r.err, (r.code, r.err[-500:])


@pytest.mark.parametrize("env", ["007", "0", "9" * 5000, "7 ", "-1"])
def test_ixtool_pr_environment_is_canonical(env: str) -> None:
    from inferencex_tools.changelog.merge_service import driver_pr
    from inferencex_tools.io.actions import ActionsEnv

    value = env.strip()  # io/actions strips $IXTOOL_PR
    if value == "7":
        assert driver_pr(None, ActionsEnv(pr=value)) == 7
        return
    with pytest.raises(UsageError):
        driver_pr(None, ActionsEnv(pr=value))
