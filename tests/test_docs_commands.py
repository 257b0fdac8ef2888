"""Every `harness ...` command in the README and docs/ parses, so the docs cannot drift.

Each command line in a ```bash block, and each inline `harness ...` span, is split as a shell
would, its subcommands are looked up in the CLI, and the leaf command's options and arguments are
parsed and converted by click (`make_context`), which runs nothing. A synopsis (a line holding
`[`) and a placeholder in capitals (`LOG`, `N`) are kept to what click can check: a placeholder
given to a number option is replaced by 1 first.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from harness.cli import main

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_.]*$")


def _commands(text: str) -> list[tuple[str, bool]]:
    """`harness ...` commands in bash blocks (continuation lines joined), which must be whole,
    and in inline spans, which may leave out what the sentence around them supplies."""
    out = []
    for block in re.findall(r"```(?:bash|sh|console)?\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("harness "):
                out.append((line, True))
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    out += [(m, False) for m in re.findall(r"`(harness [^`]+)`", prose)]
    return out


def _strip_comment(line: str) -> str:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return " ".join(shlex.quote(t) for t in lexer)


def _parse(line: str, whole: bool = True) -> None:
    """Resolve the subcommands and parse the rest; raises click's error where it does not.

    A line that need not be whole may leave out a required argument or option.
    """
    words = shlex.split(_strip_comment(line))[1:]
    for stop in ("|", ">", "&&", ";", "2>&1"):
        if stop in words:
            words = words[: words.index(stop)]
    command: click.Command = main
    path = ["harness"]
    while isinstance(command, click.Group):
        if not words or words[0] in ("--help", "-h"):
            return
        ctx = click.Context(command, info_name=" ".join(path))
        sub = command.get_command(ctx, words[0])
        if sub is None:
            raise click.UsageError(f"no command {words[0]!r} under {' '.join(path)}")
        path.append(words.pop(0))
        command = sub
    numbers = {
        opt: p
        for p in command.params
        if isinstance(p, click.Option) and isinstance(p.type, (click.types.IntParamType,
                                                              click.types.FloatParamType))
        for opt in p.opts
    }  # fmt: skip
    words = [
        "1" if PLACEHOLDER.match(w) and i and words[i - 1] in numbers else w
        for i, w in enumerate(words)
    ]
    try:
        command.make_context(" ".join(path), words, resilient_parsing=False)
    except click.MissingParameter:
        if whole:
            raise


def _cases() -> list[tuple[str, str, bool]]:
    cases = []
    for doc in DOCS:
        for line, whole in _commands(doc.read_text(encoding="utf-8")):
            if "[" in line or "..." in line:  # a synopsis, not a command
                continue
            cases.append((str(doc.relative_to(ROOT)), line, whole))
    return cases


CASES = _cases()


def test_the_docs_hold_commands() -> None:
    assert len(CASES) >= 40
    assert any(doc == "README.md" for doc, _, _ in CASES)


@pytest.mark.parametrize(("doc", "line", "whole"), CASES,
                         ids=[f"{d}:{i}" for i, (d, _, _) in enumerate(CASES)])  # fmt: skip
def test_every_command_in_the_docs_parses(doc: str, line: str, whole: bool) -> None:
    try:
        _parse(line, whole)
    except click.exceptions.Exit:
        pass
    except click.ClickException as ex:
        pytest.fail(f"{doc}: `{line}` does not parse: {ex.format_message()}")


def test_the_check_catches_a_bad_option() -> None:
    with pytest.raises(click.ClickException):
        _parse("harness eval --suite arith --no-such-option 3")
    with pytest.raises(click.ClickException):
        _parse("harness board replay b.csv --orders many")
    with pytest.raises(click.ClickException):
        _parse("harness nonsense")


def test_every_relative_link_in_the_docs_resolves() -> None:
    missing = []
    for doc in DOCS:
        text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:|#", target):
                continue
            path = (doc.parent / target.split("#")[0]).resolve()
            if not path.exists():
                missing.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not missing, "\n".join(missing)
