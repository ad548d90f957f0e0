"""The README's command reference lists every command and option the CLI has."""

from __future__ import annotations

import argparse
import re

from docsym.cli import build_parser
from tests.conftest import REPO


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_readme_lists_every_command_with_its_options() -> None:
    readme = (REPO / "README.md").read_text()
    block = re.search(r"## Command line\s+```\n(.*?)```", readme, re.S)
    assert block, "README lost its command reference"
    lines = {line.split()[1]: line for line in block.group(1).splitlines() if line.strip()}
    for name, command in _commands().items():
        assert name in lines, f"docsym {name} is missing from the README"
        for action in command._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    assert option in lines[name], f"docsym {name} {option} is not in the README"
