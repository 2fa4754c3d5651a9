"""Resource limits and hostile files: each ends in a clean, specific ixtool error.

Limits (see docs/reliability.md): 32 MiB per file, 100 YAML aliases and 1,000,000
nodes after alias expansion, nesting depth 64.  The entry count is bounded by the
size limit (a minimal entry is ~130 bytes, so ~250,000 entries fit in 32 MiB).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.changelog.model import parse
from inferencex_tools.changelog.validate import Options, validate_standalone
from inferencex_tools.errors import InputError, LimitExceeded, YamlError
from inferencex_tools.io.files import read_bytes
from inferencex_tools.io.yamlio import DEFAULT_LIMITS, load_rt, load_safe
from tests.conftest import CPU, TempRepo
from tests.reliability.helpers import ROOT, changelog, entry, ixtool

LOADERS = [load_safe, load_rt]


def billion_laughs(levels: int = 9, width: int = 9) -> bytes:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return ("\n".join(lines) + "\n").encode()


def rules_of(raw: bytes) -> set[str]:
    return {f.rule for f in parse(raw, "perf-changelog.yaml").findings}


# --------------------------------------------------------------------- aliases

@pytest.mark.parametrize("load", LOADERS)
def test_billion_laughs_is_refused_fast(load: object) -> None:
    with CPU() as cpu, pytest.raises(LimitExceeded) as ei:
        load(billion_laughs(), source="bomb.yaml")  # type: ignore[operator]
    assert cpu.seconds < 5
    assert ei.value.kind == "limit" and "alias" in ei.value.message


def test_small_alias_bomb_under_the_alias_count_is_refused_by_expansion() -> None:
    # 6 levels × 9 aliases = 54 aliases (under 100) but 9**7 ≈ 4.8 M nodes expanded
    with pytest.raises(LimitExceeded, match="expand"):
        load_safe(billion_laughs(levels=6), source="bomb.yaml")


@pytest.mark.parametrize("load", LOADERS)
def test_alias_count_limit(load: object) -> None:
    n = DEFAULT_LIMITS.max_aliases + 1
    doc = b"a: &a x\n" + b"".join(f"k{i}: *a\n".encode() for i in range(n))
    with pytest.raises(LimitExceeded, match=f"more than {n - 1} YAML aliases"):
        load(doc, source="aliases.yaml")  # type: ignore[operator]
    ok = b"a: &a x\n" + b"".join(f"k{i}: *a\n".encode() for i in range(n - 1))
    assert len(load(ok, source="ok.yaml")) == n  # type: ignore[operator]


def test_alias_bomb_in_a_changelog_is_a_finding() -> None:
    raw = b"- config-keys: &a [a, a, a, a, a, a, a, a]\n" + billion_laughs().replace(
        b"l0:", b"  l0:").replace(b"\nl", b"\n  l")
    assert "CL112" in rules_of(raw) or "CL110" in rules_of(raw)
    assert "CL112" in rules_of(b"- config-keys:\n" + b"".join(
        f"  k{i}: *x\n".encode() for i in range(3)).replace(b"*x", b"&x y", 1)
        + b"".join(f"  j{i}: *x\n".encode() for i in range(150)))


# ---------------------------------------------------------------------- nesting

DEEP = {
    "flow-seq": lambda n: b"[" * n + b"]" * n + b"\n",
    "flow-map": lambda n: b"{a: " * n + b"}" * n + b"\n",
    "block-seq": lambda n: b"- " * n + b"x\n",
    "block-map": lambda n: "".join(" " * i + "k:\n" for i in range(n)).encode() + b" " * n
    + b"v\n",
}


@pytest.mark.parametrize("shape", sorted(DEEP))
@pytest.mark.parametrize("load", LOADERS)
def test_10000_deep_nesting_is_refused(shape: str, load: object) -> None:
    n = 10_000 if shape != "block-map" else 3_000  # block-map: indentation makes it O(n²)
    with CPU() as cpu, pytest.raises(LimitExceeded, match="nesting"):
        load(DEEP[shape](n), source="deep.yaml")  # type: ignore[operator]
    assert cpu.seconds < 20


def test_depth_limit_is_exact() -> None:
    limit = DEFAULT_LIMITS.max_depth
    assert load_safe(b"[" * limit + b"]" * limit) is not None
    with pytest.raises(LimitExceeded):
        load_safe(b"[" * (limit + 1) + b"]" * (limit + 1))


@pytest.mark.parametrize("n", [100_000, 1_000_000])
def test_very_deep_nesting_does_not_crash_the_interpreter(n: int) -> None:
    """The C composer recursed without bound: 100,000-deep input was a SIGSEGV."""
    code = (
        "import sys\n"
        "from inferencex_tools.io.yamlio import load_safe\n"
        "from inferencex_tools.errors import LimitExceeded\n"
        f"for doc in (b'[' * {n} + b']' * {n}, b'- ' * {n} + b'x'):\n"
        "    try:\n"
        "        load_safe(doc)\n"
        "    except LimitExceeded as exc:\n"
        "        print('limit', exc.message)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert p.returncode == 0, (p.returncode, p.stderr[-1000:])
    assert p.stdout.count("limit <input>") == 2, p.stdout


def test_deep_changelog_is_a_finding() -> None:
    raw = b"- config-keys:\n  - " + b"[" * 10_000 + b"]" * 10_000 + b"\n"
    assert "CL112" in rules_of(raw)


# ------------------------------------------------------------------------- size

def test_50mb_changelog_is_refused_by_the_cli(tmp_path: Path) -> None:
    p = tmp_path / "perf-changelog.yaml"
    one = entry(1).encode() + b"\n"
    p.write_bytes(one * (50 * 1024 * 1024 // len(one) + 1))
    assert p.stat().st_size > 50 * 1024 * 1024
    with CPU() as cpu:
        r = ixtool("changelog", "validate", str(p), "--repo", "SemiAnalysisAI/InferenceX",
                   cwd=tmp_path)
    r.assert_clean_exit()
    assert r.code == 2 and "over the 32 MiB limit" in r.err
    assert cpu.seconds < 30
    with pytest.raises(InputError, match="32 MiB"):
        read_bytes(p)


def test_50mb_snapshot_is_a_limit_finding() -> None:
    raw = (entry(1).encode() + b"\n") * (50 * 1024 * 1024 // 150)
    assert "CL112" in rules_of(raw)


def test_million_entry_changelog_is_refused_by_size(tmp_path: Path) -> None:
    """1,000,000 minimal entries are ~140 MB: refused up front, before any parsing."""
    p = tmp_path / "perf-changelog.yaml"
    with p.open("wb") as fh:
        for i in range(0, 1_000_000, 10_000):
            fh.write(changelog(10_000, start=i + 1) + b"\n\n")
    with CPU() as cpu:
        r = ixtool("changelog", "validate", str(p), cwd=tmp_path)
    r.assert_clean_exit()
    assert r.code == 2 and "limit" in r.err
    assert cpu.seconds < 30


def test_entry_count_scales_linearly() -> None:
    """A 2,000-entry file validates in well under the per-entry budget."""
    raw = changelog(2_000)
    with CPU() as cpu:
        cl = validate_standalone(raw, "perf-changelog.yaml", Options())
    assert len(cl.entries) == 2_000 and not cl.findings
    assert cpu.seconds < 15


# ------------------------------------------------------------ hostile file kinds

@pytest.mark.parametrize("data", [
    bytes(range(256)) * 64,  # every byte value
    b"\x89PNG\r\n\x1a\n" + os.urandom(2048),
    b"\x7fELF\x02\x01\x01" + b"\0" * 2000,
    b"PK\x03\x04" + os.urandom(512),
    b"\xff\xfe" + "- config-keys:\n".encode("utf-16-le"),
])
def test_binary_file_is_findings_not_a_crash(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "perf-changelog.yaml"
    p.write_bytes(data)
    r = ixtool("changelog", "validate", str(p), "--format", "json", cwd=tmp_path)
    r.assert_clean_exit()
    assert r.code == 1 and r.rules & {"CL104", "CL105", "CL110", "CL113"}


def test_symlink_out_of_the_repository_is_refused(temp_repo: TempRepo, tmp_path: Path
                                                  ) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_bytes(b"- config-keys: [TOKEN-abc123]\n")
    temp_repo.write("README", "x\n")
    temp_repo.commit()
    link = temp_repo.path / "perf-changelog.yaml"
    link.symlink_to(secret)
    with pytest.raises(InputError, match="outside the repository"):
        read_bytes(link)
    r = ixtool("changelog", "validate", "perf-changelog.yaml", "--format", "json",
               cwd=temp_repo.path)
    r.assert_clean_exit()
    assert r.code == 2 and "outside the repository" in r.err
    assert "TOKEN-abc123" not in r.out + r.err
    for target in ("/proc/self/environ", "/dev/zero", "/etc/passwd"):
        link.unlink()
        link.symlink_to(target)
        with pytest.raises(InputError, match="outside the repository"):
            read_bytes(link)


def test_symlinked_directory_out_of_the_repository_is_refused(temp_repo: TempRepo,
                                                              tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "amd-master.yaml").write_bytes(b"k: v\n")
    (temp_repo.path / "configs").symlink_to(outside)
    with pytest.raises(InputError, match="outside the repository"):
        read_bytes(temp_repo.path / "configs" / "amd-master.yaml")


def test_symlink_inside_the_repository_is_followed(temp_repo: TempRepo) -> None:
    real = temp_repo.write("docs/perf-changelog.yaml", changelog(2))
    (temp_repo.path / "perf-changelog.yaml").symlink_to("docs/perf-changelog.yaml")
    assert read_bytes(temp_repo.path / "perf-changelog.yaml") == real.read_bytes()


def test_symlink_loop_is_a_clean_error(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(InputError):
        read_bytes(a)


def test_directory_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        read_bytes(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        read_bytes(tmp_path / "nope.yaml")
    with pytest.raises(InputError):
        read_bytes(tmp_path / "nope" / "x.yaml")


def test_unreadable_special_file_is_a_clean_error() -> None:
    """Works as root too: reading /proc/self/mem at offset 0 fails with EIO."""
    if not Path("/proc/self/mem").exists():
        pytest.skip("no /proc")
    with pytest.raises(InputError, match="cannot read"):
        read_bytes("/proc/self/mem")


def test_unreadable_file_chmod_000(tmp_path: Path) -> None:
    """chmod 000.  Tests run as root, which reads anything: the CLI then runs under
    ``setpriv`` without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH, so the mode is honoured."""
    import shutil

    p = tmp_path / "perf-changelog.yaml"
    p.write_bytes(changelog(1))
    p.chmod(0)
    try:
        if os.geteuid() != 0:
            with pytest.raises(InputError, match="cannot read"):
                read_bytes(p)
            return
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root and setpriv(1) is not available to drop "
                        "CAP_DAC_OVERRIDE; /proc/self/mem covers the read-error path")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [setpriv, "--bounding-set=-dac_override,-dac_read_search", sys.executable,
             "-m", "inferencex_tools", "changelog", "validate", str(p)],
            capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
        if "Operation not permitted" in proc.stderr and "ixtool" not in proc.stderr:
            pytest.skip(f"setpriv cannot drop capabilities here: {proc.stderr[-200:]}")
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "not readable" in proc.stderr or "Permission denied" in proc.stderr
        code = ("from inferencex_tools.io.files import read_bytes\n"
                "from inferencex_tools.errors import InputError\n"
                f"try:\n    read_bytes({str(p)!r})\nexcept InputError as e:\n"
                "    print('clean:', e.message)\n")
        proc = subprocess.run(
            [setpriv, "--bounding-set=-dac_override,-dac_read_search", sys.executable,
             "-c", code], capture_output=True, text=True, timeout=60, env=env)
        assert "clean:" in proc.stdout and "Permission denied" in proc.stdout, proc.stderr
    finally:
        p.chmod(0o600)


def test_yaml_errors_carry_position() -> None:
    with pytest.raises(YamlError) as ei:
        load_safe(b"a: 1\nb: [\n", source="x.yaml")
    assert ei.value.line is not None and ei.value.message.startswith("x.yaml:")


def test_output_stays_small_for_a_huge_line(tmp_path: Path) -> None:
    """A 1,000,000-deep one-line document: the text snippet is a window, not 2 MB."""
    p = tmp_path / "perf-changelog.yaml"
    p.write_bytes(b"- " * 1_000_000 + b"x\n")
    r = ixtool("changelog", "validate", str(p), cwd=tmp_path)
    r.assert_clean_exit()
    assert r.code == 1 and "nesting" in r.out
    assert len(r.out) < 2_000, len(r.out)


@pytest.mark.parametrize("load", LOADERS)
def test_duplicate_key_with_an_alias_bomb_value_is_fast(load: object) -> None:
    """ruamel formats the duplicate's *value* into its message: with an aliased
    8-level bomb as the value that repr never ended (found by fuzz_long)."""
    doc = billion_laughs(levels=8) + b"j: *l8\nj: *l8\n"
    with CPU() as cpu, pytest.raises(YamlError, match='duplicate key "j"'):
        load(doc, source="dup.yaml")  # type: ignore[operator]
    assert cpu.seconds < 5
