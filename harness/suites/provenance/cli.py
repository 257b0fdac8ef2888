"""`harness provenance detect --key K FILE`: test texts for a KGW watermark.

The catalog names this group (`Suite.commands`). FILE is a text file (one text) or, with a
`.jsonl` name or `--jsonl`, one text per line: a JSON string, {"text": ...}, or {"tokens":
[ids]} for token ids from our local models. Text is tokenized as UTF-8 bytes (vocabulary 256)
unless `--tokenizer` names a Hugging Face tokenizer folder on disk. Each text prints its exact
p-value and the number of scored (deduplicated) tokens.

Inputs are read in bounded memory: the file must be a regular file (a FIFO or device is refused
without blocking), no bigger than the limits below, and UTF-8; a JSONL file is read line by
line. Mistakes are one line on stderr, exit code 2.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from harness.errors import HarnessUsageError, exit_on_usage_error

# The detector holds a few int64 copies of a text's (context, token) windows while it
# deduplicates them: an 8 MiB text peaked at 0.94 GB resident (measured, h = 2).
MAX_TEXT_BYTES = 8 << 20  # one plain-text file
MAX_LINE_BYTES = 8 << 20  # one JSONL line


@click.group("provenance")
def provenance() -> None:
    """Watermark detection with a key (KGW green lists, exact binomial p-value)."""


def _texts(path: str, jsonl: bool) -> Iterator[tuple[str, Any]]:
    """(label, str or list of token ids) for each text of the file."""
    from harness.bounded_json import JsonInputError, iter_lines, read_bytes

    try:
        if not jsonl:
            raw = read_bytes(path, MAX_TEXT_BYTES)
            try:
                yield path, raw.decode("utf-8")
            except UnicodeDecodeError as ex:
                raise HarnessUsageError(
                    f"{path}: not UTF-8 (byte {ex.start}); save it as UTF-8"
                ) from None
            return
        for number, value in iter_lines(path, max_line=MAX_LINE_BYTES):
            where = f"{path} line {number}"
            if isinstance(value, dict):
                if "tokens" in value:
                    toks = value["tokens"]
                    if not (isinstance(toks, list) and all(
                            isinstance(t, int) and not isinstance(t, bool) and 0 <= t < 2**31
                            for t in toks)):  # fmt: skip
                        raise HarnessUsageError(f"{where}: 'tokens' must be a list of token ids")
                    yield where, toks
                    continue
                value = value.get("text")
            if not isinstance(value, str):
                raise HarnessUsageError(
                    f'{where}: write a JSON string, {{"text": "..."}} or {{"tokens": [...]}}'
                )
            yield where, value
    except JsonInputError as ex:
        raise HarnessUsageError(str(ex)) from None


def _tokenizer(name: str | None) -> Any:
    if name is None:
        import numpy as np

        return lambda text: np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise HarnessUsageError(
            "--tokenizer needs transformers: pip install transformers"
        ) from None
    try:
        tok = AutoTokenizer.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError) as ex:
        first = str(ex).strip().splitlines()[0] if str(ex).strip() else type(ex).__name__
        raise HarnessUsageError(f"--tokenizer {name}: cannot load it from disk ({first})") from None
    return lambda text: tok(text, add_special_tokens=False)["input_ids"]


@provenance.command("detect")
@click.argument("file")
@click.option("--key", required=True, help="The watermark key: decimal or 0x-hex, below 2**64.")
@click.option("--gamma", type=float, default=0.25, show_default=True, help="Green fraction.")
@click.option("--context", "h", type=int, default=2, show_default=True,
              help="Context width h (tokens before the scored one).")  # fmt: skip
@click.option("--alpha", type=float, default=1e-3, show_default=True,
              help="Level at which a text reads 'watermarked'.")  # fmt: skip
@click.option("--jsonl", is_flag=True, help="FILE holds one text per line (default for .jsonl).")
@click.option("--tokenizer", default=None, help="A Hugging Face tokenizer folder (default: bytes).")
@exit_on_usage_error
def detect_command(file: str, key: str, gamma: float, h: int, alpha: float, jsonl: bool,
                   tokenizer: str | None) -> None:  # fmt: skip
    """Print each text's exact p-value and its number of scored tokens."""
    from harness.suites.provenance.greenlist import GreenList, parse_key

    try:
        key_value = parse_key(key)
    except ValueError as ex:
        raise HarnessUsageError(f"--key: {ex}") from None
    if not 0 < gamma < 1:
        raise HarnessUsageError(f"--gamma must be in (0, 1), got {gamma}")
    if not 1 <= h <= 16:
        raise HarnessUsageError(f"--context must be 1..16, got {h}")
    if not 0 < alpha < 1:
        raise HarnessUsageError(f"--alpha must be in (0, 1), got {alpha}")
    rule = GreenList(gamma, 2**31, h)
    encode = _tokenizer(tokenizer)
    as_jsonl = jsonl or Path(file).suffix.lower() == ".jsonl"
    count = 0
    for where, text in _texts(file, as_jsonl):
        if (isinstance(text, str) and not text.strip()) or (isinstance(text, list) and not text):
            raise HarnessUsageError(f"{where}: empty text; give text to test")
        tokens = text if isinstance(text, list) else encode(text)
        if len(tokens) == 0:  # a tokenizer that makes nothing of it
            raise HarnessUsageError(f"{where}: no tokens in the text")
        from harness.suites.provenance.detect import detect  # scipy: after the input is checked

        result = detect(tokens, key_value, rule)
        verdict = "watermarked" if result.p_value <= alpha else "not detected"
        click.echo(f"{where}: p={result.p_value:.4g} scored={result.scored} "
                   f"green={result.green} ({verdict} at α={alpha:g})")  # fmt: skip
        count += 1
    if count == 0:
        raise HarnessUsageError(f"{file}: no texts in it")
