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
            options = [o for o in action.option_strings if o.startswith("--") and o != "--help"]
            if not options:
                continue
            # The first spelling is the one the reference shows; an older one kept working
            # (--store for --postgres) is said in the prose around it.
            assert options[0] in lines[name], f"docsym {name} {options[0]} is not in the README"
            for alias in options[1:]:
                assert f"`{alias}" in readme, f"docsym {name} {alias} (an alias) is not in README"
