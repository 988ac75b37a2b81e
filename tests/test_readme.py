"""The README cannot drift from the code: its command table and docs/cli.md are generated from the
CLI, its two commands are the ones the Makefile and CI run, and the demo numbers it shows are the
ones the committed demo report (docs/demo/report.md, written by `envtrain demo`) holds."""

from __future__ import annotations

import re
from pathlib import Path

from envtrain.clidoc import command_table, reference

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block(name: str) -> str:
    found = re.search(rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", README, re.S)
    assert found, f"README lacks the {name} block"
    return found.group(1)


def test_the_command_table_and_docs_cli_are_generated_from_the_cli() -> None:
    assert _block("cli") == command_table(), "README command table is stale: regenerate with envtrain.clidoc.command_table()"
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == reference(), "docs/cli.md is stale: python -m envtrain.clidoc > docs/cli.md"


def test_the_two_commands_are_what_make_and_ci_run() -> None:
    quick = README[README.index("## Quick start"):README.index("## The demo")]
    commands = re.findall(r"^(make \w+)", quick, re.M)
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo: setup\n\t\$\(BIN\)/envtrain demo\b", makefile, re.M)
    assert re.search(r"^test: setup\n\t\$\(BIN\)/python -m pytest tests\b", makefile, re.M)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test\s*$", ci, re.M)


def test_the_demo_numbers_are_the_committed_reports() -> None:
    report = (ROOT / "docs" / "demo" / "report.md").read_text(encoding="utf-8")
    rows = [line for line in _block("demo-results").splitlines() if line.startswith("| ")]
    assert len(rows) >= 5  # header, rule, three checkpoints
    for line in rows:
        assert line in report, f"README demo row not in docs/demo/report.md: {line}"
    for image in re.findall(r"\]\((docs/demo/plots/[\w.]+\.png)\)", _block("demo-results")):
        assert (ROOT / image).stat().st_size > 1000
