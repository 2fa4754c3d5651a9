"""Properties of the text helpers: the printed server command is the exact argv."""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from inferencex_tools.launch.render import format_command
from inferencex_tools.launch.slurmargs import gpus_requested, parse_slurm_args

ARG = st.one_of(
    st.sampled_from(["--port", "8888", "--speculative-config", '{"a": 1, "b": "x y"}',
                     "--flag", "-tp", "8", "--k=v", "", "it's", "$HOME", "a\\b", "--"]),
    st.text(st.characters(blacklist_categories=["Cs", "Cc"]), max_size=12),
)


@settings(max_examples=300, deadline=None)
@given(head=st.lists(st.from_regex(r"[a-z][a-z0-9_.-]{0,8}", fullmatch=True), min_size=1,
                     max_size=3),
       rest=st.lists(ARG, max_size=12))
def test_format_command_round_trips(head: list[str], rest: list[str]) -> None:
    cmd = [*head, *rest]
    text = format_command(cmd)
    assert shlex.split(text.replace(" \\\n", " ")) == cmd


def test_parse_slurm_args() -> None:
    opts, cmd = parse_slurm_args(["-p", "h200", "--gres=gpu:8", "-N", "2", "--exclusive",
                                  "--export", "ALL,PORT=1", "bash", "run.sh", "--x"])
    assert opts == {"--partition": ["h200"], "--gres": ["gpu:8"], "--nodes": ["2"],
                    "--exclusive": [""], "--export": ["ALL,PORT=1"]}
    assert cmd == ["bash", "run.sh", "--x"]
    assert gpus_requested(opts) == 8
    assert gpus_requested(parse_slurm_args(["--gpus-per-node=h200:4"])[0]) == 4
    assert gpus_requested(parse_slurm_args(["--gres=gpu:h200:2,nic:1"])[0]) == 2
    assert gpus_requested(parse_slurm_args(["-n", "1"])[0]) is None
