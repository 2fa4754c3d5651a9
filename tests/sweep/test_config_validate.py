"""``ixtool config validate`` and the generator's acceptance, case by case.

Each file in tests/cases/sweep/config/ starts with two header lines:

    # expect: clean | RULE@LINE [RULE@LINE …]   (config validate, strict)
    # generator: ok | error                      (what the reference generator accepts)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.errors import InputError
from inferencex_tools.report.findings import Severity
from inferencex_tools.sweep.generate import SweepRequest, generate
from inferencex_tools.sweep.load import merge_masters, parse_runners
from inferencex_tools.sweep.service import validate_for_generation
from inferencex_tools.sweep.validate import MasterFile, ValidateInput, validate
from tests.conftest import ROOT

CASES = ROOT / "tests" / "cases" / "sweep"
CONFIG_CASES = sorted((CASES / "config").glob("*.yaml"))
RUNNERS = (CASES / "runners.yaml").read_bytes()


def _header(path: Path) -> tuple[list[str], str]:
    lines = path.read_text().splitlines()
    expect = lines[0].removeprefix("# expect:").split()
    gen = lines[1].removeprefix("# generator:").strip()
    return expect, gen


@pytest.mark.parametrize("path", CONFIG_CASES, ids=[p.stem for p in CONFIG_CASES])
def test_config_validate_case(path: Path) -> None:
    expect, _ = _header(path)
    res = validate(ValidateInput(masters=[MasterFile(path.name, path.read_bytes())],
                                 runners=MasterFile("runners.yaml", RUNNERS)))
    found = {f"{f.rule}@{f.line}" for f in res.findings
             if f.severity is not Severity.NOTE and f.rule != "SW405"}
    if expect == ["clean"]:
        assert not found, [f.to_dict() for f in res.findings]
        assert res.exit_code() == 0
    else:
        for e in expect:
            assert e in found, (e, sorted(found))
    for f in res.findings:
        assert f.rule.startswith("SW") and f.hint


@pytest.mark.parametrize("path", CONFIG_CASES, ids=[p.stem for p in CONFIG_CASES])
def test_generator_acceptance(path: Path) -> None:
    """Lax (reference) validation: coerced values pass and are emitted verbatim."""
    _, gen = _header(path)
    configs = merge_masters([(path.name, path.read_bytes())])
    runners = parse_runners(RUNNERS, "runners.yaml")
    if gen == "ok":
        validate_for_generation(configs)
        rows = generate(configs, runners, SweepRequest())
        assert rows
    else:
        with pytest.raises(InputError):
            validate_for_generation(configs)
            generate(configs, runners, SweepRequest())


def test_string_tp_leaks_verbatim_like_reference() -> None:
    path = CASES / "config" / "string-tp.yaml"
    configs = merge_masters([(path.name, path.read_bytes())])
    rows = generate(configs, parse_runners(RUNNERS, "r"), SweepRequest(no_evals=True))
    assert rows[0]["tp"] == "4"  # reference behaviour; config validate flags it (SW204)


def test_real_corpus_validates_with_warnings(corpus: Path) -> None:
    cfg = corpus / "configs"
    res = validate(ValidateInput(
        masters=[MasterFile(str(cfg / n), (cfg / n).read_bytes())
                 for n in ("amd-master.yaml", "nvidia-master.yaml")],
        runners=MasterFile("runners.yaml", (cfg / "runners.yaml").read_bytes())))
    assert res.exit_code() == 0, [f.to_dict() for f in res.errors][:5]
    unknown = sorted({f.message.split("'")[1] for f in res.warnings if f.rule == "SW401"})
    # SWEEP.md §1.2: 8 configs use labels absent from runners.yaml
    assert len([f for f in res.warnings if f.rule == "SW401"]) == 8
    assert unknown == ["cluster:mi325x-tw", "gb300-nv", "h200-dgxc"]
    assert all(f.line for f in res.warnings if f.rule == "SW401")
    assert any(f.rule == "SW405" for f in res.warnings)  # no scripts dir in the corpus


def test_new_key_with_unknown_label_is_error_in_pr_mode() -> None:
    path = CASES / "config" / "unknown-runner.yaml"
    inp = ValidateInput(masters=[MasterFile(path.name, path.read_bytes())],
                        runners=MasterFile("runners.yaml", RUNNERS), base_keys=set())
    res = validate(inp)
    assert any(f.rule == "SW401" and f.severity is Severity.ERROR for f in res.findings)


def test_scripts_checked_when_present() -> None:
    path = CASES / "config" / "ok-agentic-dram.yaml"
    seen: list[str] = []

    def exists(p: str) -> bool:
        seen.append(p)
        return False

    res = validate(ValidateInput(masters=[MasterFile(path.name, path.read_bytes())],
                                 runners=MasterFile("runners.yaml", RUNNERS), exists=exists))
    scripts = [f for f in res.errors if f.rule == "SW403"]
    assert scripts and "benchmarks/single_node/agentic/m3_fp8_h200_vllm_mtp.sh" in seen
    assert not any(f.rule == "SW405" for f in res.findings)


def test_this_repo_configs_clean(monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    from inferencex_tools.cli.main import run

    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as exc:
        run(["config", "validate", "--strict"])
    out = capsys.readouterr().out
    assert exc.value.code == 0, out


def test_yaml_errors_are_findings() -> None:
    res = validate(ValidateInput(masters=[MasterFile("bad.yaml", b"a: 1\na: 2\n"),
                                          MasterFile("list.yaml", b"- 1\n")]))
    rules = {(f.rule, f.file, f.line) for f in res.errors}
    assert ("SW101", "bad.yaml", 2) in rules
    assert ("SW102", "list.yaml", 1) in rules


def test_launcher_and_hardware_warnings(tmp_path: Path) -> None:
    runners = (b"labels:\n  cluster:h200-dgxc:\n    - h200-dgxc-slurm_0\n    - b300-cw_1\n"
               b"  cluster:other:\n    - other_0\n")
    cfg = (CASES / "config" / "ok-agentic-dram.yaml").read_text()
    no_dram = cfg.replace("runner: cluster:h200-dgxc", "runner: cluster:other").replace(
        '{ tp: 8, kv-offloading: dram, kv-offload-backend: { name: mooncake, version: "0.3" }'
        ', conc-list: [12] }', "{ tp: 8, kv-offloading: none, conc-list: [12] }")
    existing = {"runners/launch_h200-dgxc-slurm.sh", "runners/launch_other.sh"}
    res = validate(ValidateInput(
        masters=[MasterFile("a.yaml", cfg.encode()), MasterFile("b.yaml",
                                                                no_dram.encode())],
        runners=MasterFile("runners.yaml", runners),
        exists=lambda p: p in existing or p.endswith("_mtp.sh") or p.endswith("h200.sh")))
    got = {(f.rule, f.file, f.line) for f in res.findings}
    assert ("SW406", "runners.yaml", 2) in got  # b300-cw_1 has no launcher
    assert ("SW314", "a.yaml", 7) in got  # dram offload, no hardware entry
    assert ("SW402", "b.yaml", 7) in got  # agentic label without hardware
    assert ("SW104", "b.yaml", 3) in got  # same key in both files


def test_cli_detects_runners_file_by_content(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from inferencex_tools.cli.main import run

    inv = tmp_path / "inventory.yaml"
    inv.write_bytes(RUNNERS)
    with pytest.raises(SystemExit) as exc:
        run(["config", "validate", str(CASES / "config" / "ok-single-node.yaml"), str(inv),
             "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert exc.value.code == 0
    assert str(inv) in out["checked"]
    assert not [f for f in out["findings"] if f["rule"] == "SW401"]


def test_cli_base_mode_new_key_unknown_label(temp_repo: Any, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from inferencex_tools.cli.main import run

    temp_repo.write("configs/runners.yaml", RUNNERS)
    old = (CASES / "config" / "unknown-runner.yaml").read_text()
    temp_repo.write("configs/nvidia-master.yaml", old)
    temp_repo.commit("base: existing key on an unknown label")
    monkeypatch.chdir(temp_repo.path)
    new_key = old.split("\n", 2)[2].replace("m3-fp8-h200-vllm-agentic:", "m3-new:")
    typo = new_key.replace("m3-new:", "m3-typo:").replace("cluster:nowhere",
                                                          "cluster:nowhere2")
    temp_repo.write("configs/nvidia-master.yaml", old + "\n" + new_key + "\n" + typo)
    with pytest.raises(SystemExit) as exc:
        run(["config", "validate", "--base", "HEAD", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert exc.value.code == 1
    sw401 = {(f["severity"], f["line"]) for f in out["findings"] if f["rule"] == "SW401"}
    # the old key's warning is already present at the base; a new key on the label the
    # base's key uses is as on main (a warning), one on a label nobody uses an error
    assert sw401 == {("warning", 22), ("error", 37)}


@pytest.mark.parametrize("layout", ["configs", ".github/configs", ".github/configs+settings"])
@pytest.mark.parametrize("with_scripts", [True, False])
def test_scripts_found_in_either_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str], layout: str,
                                        with_scripts: bool) -> None:
    """Before 2026-07-02 the master configs lived under .github/configs/ while benchmarks/
    stayed at the repository root: the scripts are found there too (SW405 only when the
    repository really has no benchmarks/)."""
    import shutil
    import subprocess

    from inferencex_tools.cli.main import run

    layout, _, settings = layout.partition("+")
    shutil.copytree(ROOT / "configs", tmp_path / layout)
    if settings:  # a checkout's settings naming another folder do not hide the scripts
        (tmp_path / ".ixtool.toml").write_text('master-configs = ["elsewhere/*.yaml"]\n')
    if with_scripts:
        shutil.copytree(ROOT / "benchmarks", tmp_path / "benchmarks")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    files = [str(p.relative_to(tmp_path)) for p in sorted((tmp_path / layout).glob("*.yaml"))
             ] if settings else []
    with pytest.raises(SystemExit):
        run(["config", "validate", *files, "--format", "json"])
    rules = {f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert ("SW405" in rules) is not with_scripts, rules
