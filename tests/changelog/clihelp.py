"""Running the real ``ixtool`` CLI in a subprocess with a scrubbed environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import GIT_ENV

# Variables GitHub Actions sets that change ixtool's defaults (PR number, repo, summary):
# removed so a test decides them itself.
_SCRUB = ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_STEP_SUMMARY",
          "IXTOOL_TRACEBACK", "NO_COLOR")


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in GIT_ENV.items() if k not in _SCRUB}
    env.update(extra or {})
    return env


def ixtool(cwd: Path, *args: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inferencex_tools", *args], cwd=cwd, capture_output=True,
        text=True, env=cli_env(env), check=False,
    )
