"""The documented command lines against the parser: README's "Command line" synopsis names only
options that exist, and all of a command's options unless its line ends in "..." (the agent's);
docs/agent.md's options table lists exactly the agent's options."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from pfstune.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _synopsis() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("## Command line", 1)[1].split("```", 2)[1]
    return [line for line in block.strip().splitlines() if line.split()[:2] != ["pfstune", "--version"]]


def test_the_readme_synopsis_names_the_options_the_parser_has() -> None:
    root = build_parser()
    lines = _synopsis()
    assert len(lines) >= 10  # the block was found
    seen = set()
    for line in lines:
        words = line.split()
        parser, i = root, 1
        while i < len(words) and words[i] in _subcommands(parser):
            parser = _subcommands(parser)[words[i]]
            i += 1
        command = " ".join(words[:i])
        assert parser is not root, f"README names no subcommand: {line}"
        seen.add(command)
        documented = set(re.findall(r"--[a-z][a-z-]*", line))
        accepted = {o for a in parser._actions for o in a.option_strings if o.startswith("--")} - {"--help"}
        assert documented <= accepted, f"{command}: README names options it lacks: {sorted(documented - accepted)}"
        if not line.rstrip().endswith(" ..."):
            assert accepted <= documented, f"{command}: README leaves out {sorted(accepted - documented)}"
    # every leaf command is in the synopsis
    leaves: set[str] = set()

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        children = _subcommands(parser)
        if not children:
            leaves.add(prefix)
        for name, child in children.items():
            walk(child, f"{prefix} {name}")

    walk(root, "pfstune")
    assert leaves <= seen, f"commands missing from README's synopsis: {sorted(leaves - seen)}"


def test_the_agent_options_table_lists_every_agent_option() -> None:
    # docs/agent.md's table is the agent's full list (README's synopsis abbreviates it)
    text = (REPO / "docs" / "agent.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `--")]
    documented = {flag for row in rows for flag in re.findall(r"--[a-z][a-z-]*", row.split("|")[1])}
    agent = _subcommands(build_parser())["agent"]
    accepted = {o for a in agent._actions for o in a.option_strings if o.startswith("--")} - {"--help"}
    assert documented - accepted == set(), "options docs/agent.md lists that the agent lacks"
    assert accepted - documented == set(), "agent options docs/agent.md leaves out"
