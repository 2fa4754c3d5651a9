"""``launch render`` on the real tree: the workflow template's environment (shared
derivation with the policy check), launcher conventions recognised instead of flagged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.launch.render import mapped_to_storage, squashfs_of

SEED = "minimaxm3-fp8-h200-vllm-agentic-mtp"


@pytest.mark.parametrize(("image", "container", "want"), [
    ("vllm/vllm-openai:v0.27.1", "/data/containers/vllm_vllm-openai_v0.27.1.sqsh", True),
    ("nvcr.io/nvidia/sglang:25.01", "/squash/nvidia_sglang_25.01.sqsh", True),
    ("lmsysorg/sglang:v0.5.16-cu130", "/tmp/x/lmsysorg_sglang_v0.5.16-cu130.sqsh", True),
    ("vllm/vllm-openai:v0.27.1", "/data/containers/vllm_vllm-openai_v0.26.0.sqsh", False),
    ("vllm/vllm-openai:v0.27.1", "/data/containers/other.sqsh", False),
    ("vllm/vllm-openai:v0.27.1", "vllm/vllm-openai:v0.26.0", False),
])
def test_squashfs_built_from_the_row_image(image: str, container: str, want: bool) -> None:
    assert squashfs_of(image, container) is want


@pytest.mark.parametrize(("value", "got", "want"), [
    ("deepseek-ai/DeepSeek-R1-0528", "/lustre/fsw/models/DeepSeek-R1-0528", True),
    ("org/Model", "/data/hf/models--org--Model/snapshots/abc", True),
    ("org/Model", "/lustre/fsw/models/org/Model", True),
    ("org/Model", "/lustre/fsw/models/OtherModel", False),
    ("org/Model", "org/OtherModel", False),
    ("8", "/x/8", False),
    ("/mnt/hf_hub_cache/", "/home/runner/.cache/huggingface", True),
    ("/mnt/hf_hub_cache/", "relative/cache", False),
])
def test_model_mapped_to_shared_storage(value: str, got: str, want: bool) -> None:
    assert mapped_to_storage(value, got) is want


def _render(root: Path, *args: str) -> tuple[int, dict[str, object]]:
    proc = subprocess.run([sys.executable, "-m", "inferencex_tools", "launch", "render",
                           "--format", "json", *args], cwd=root, capture_output=True,
                          text=True, timeout=600)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.startswith("{") else {}


def test_seed_key_renders_on_the_real_tree(real_tree: Path) -> None:
    rc, doc = _render(real_tree, "--config-key", SEED, "--arm", "1", "--conc", "1")
    assert rc == 0, doc
    job = doc["info"]["jobs"][0]  # type: ignore[index]
    assert job["server"] and "vllm" in json.dumps(job["server"])
    assert job["env-source"].startswith(".github/workflows/")
    assert job["workflow-env"]["RESULT_DIR"]
    assert not [f for f in doc["findings"] if f["rule"] in ("LA307", "LA308")]  # type: ignore[union-attr]


@pytest.mark.slow
def test_seed_key_renders_at_every_concurrency(real_tree: Path) -> None:
    rc, doc = _render(real_tree, "--config-key", SEED)
    assert rc == 0, [f["message"] for f in doc.get("findings", [])]  # type: ignore[union-attr]
    jobs = doc["info"]["jobs"]  # type: ignore[index]
    assert len({(j["arm"], j["conc"]) for j in jobs}) == len(jobs) > 1
    assert all(j["server"] for j in jobs)


@pytest.mark.parametrize(("key", "conc"), [
    ("dsr1-fp8-mi300x-sglang", "4"),  # checkout staged with tar + sbcast + srun bash -c
    ("qwen3.5-fp4-rtx6000pro-sglang", "1"),  # docker run on the node, no Slurm
])
def test_staging_and_docker_launchers_render_on_the_real_tree(real_tree: Path, key: str,
                                                              conc: str) -> None:
    rc, doc = _render(real_tree, "--config-key", key, "--arm", "1", "--conc", conc)
    jobs = doc["info"]["jobs"]  # type: ignore[index]
    assert rc == 0, [f["message"] for f in doc.get("findings", [])]  # type: ignore[union-attr]
    job = jobs[0]
    assert job["server"] and "sglang.launch_server" in job["server"]["command"]
    assert job["allocation"]["container-image"]
