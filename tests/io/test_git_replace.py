"""Replace refs never change what ixtool reads at a revision (docs/security.md): a user
who can push any ref (write access) could push ``refs/replace/<blob>`` and, in a clone
that has it, make the base's ``.ixtool.toml`` (or a golden curve) read as other content."""

from __future__ import annotations

from pathlib import Path

from inferencex_tools.io.git import GitRepo
from inferencex_tools.io.gitcat import GitReader
from tests.conftest import TempRepo


def test_replace_refs_do_not_change_what_is_read(temp_repo: TempRepo) -> None:
    temp_repo.write(".ixtool.toml", "disable = []\n")
    base = temp_repo.commit("base")
    old = temp_repo.git("rev-parse", f"{base}:.ixtool.toml").strip()
    evil = temp_repo.path / "evil.toml"
    evil.write_text('disable = ["PO"]\n')
    new = temp_repo.git("hash-object", "-w", str(evil)).strip()
    temp_repo.git("replace", old, new)
    # git itself now shows the replacement
    assert temp_repo.git("cat-file", "-p", f"{base}:.ixtool.toml") == 'disable = ["PO"]\n'
    reader = GitReader(temp_repo.path)
    try:
        assert reader.blob(base, ".ixtool.toml")[0] == b"disable = []\n"
    finally:
        reader.close()
    assert GitRepo.open(Path(temp_repo.path)).show(base, ".ixtool.toml") == b"disable = []\n"
