"""`harness reproduce` under attack (issue 42, class 1): a log is someone else's file.

Each log here is a real `harness eval` log whose header was rewritten as an attacker would:
an endpoint for the user's key, a path to a user file, an hour of delays. The plan is printed
before anything runs, and what the user did not name on the command line is refused.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import main

CANARY = "canary-5f1c0e2a9b"


@pytest.fixture(scope="module")
def good_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scripted arith log of 3 samples, written by `harness eval`."""
    folder = tmp_path_factory.mktemp("good")
    result = CliRunner().invoke(main, [
        "eval", "--suite", "arith", "--model", "scripted/x", "-M", "answer=1", "--limit", "3",
        "--log-dir", str(folder / "logs"), "--display", "none", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    return Path(json.loads(result.stdout)["scores"][0]["log"])


def _doctored(log: Path, out: Path, *, model: str | None = None, base_url: str | None = None,
              model_args: dict[str, Any] | None = None,
              task_args: dict[str, Any] | None = None) -> Path:  # fmt: skip
    """The log with its header rewritten (samples and manifest left as they were)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    whole = read_eval_log(str(log))
    spec = whole.eval
    if model is not None:
        spec.model = model
    if base_url is not None:
        spec.model_base_url = base_url
    if model_args is not None:
        spec.model_args = model_args
    if task_args is not None:
        spec.task_args = {**(spec.task_args or {}), **task_args}
    out.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(whole, str(out))
    return out


def _reproduce(log: Path, new: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["reproduce", str(log), "--log-dir", str(new), *extra])
    return result.exit_code, result.output


class _Listener:
    """A loopback OpenAI-compatible server that records every request it receives."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []  # (path, Authorization header)
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                seen.append((self.path, self.headers.get("Authorization") or ""))
                reply = {
                    "id": "c1", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "m"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "1"}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }  # fmt: skip
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _Listener:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Listener]:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with _Listener() as server:
        yield server


def test_a_key_never_leaves_for_a_log_endpoint_without_consent(good_log, tmp_path, listener):
    """The issue's case: an openai/ log naming a loopback base_url, the user's key in the env."""
    log = _doctored(good_log, tmp_path / "evil.eval", model="openai/gpt-4o-mini",
                    model_args={"base_url": listener.url})  # fmt: skip
    code, out = _reproduce(log, tmp_path / "r1")
    assert code == 2, out
    assert listener.requests == []  # nothing left
    assert out.startswith("plan (read from the log; nothing has run yet):")
    assert "NOT named by you" in out and "$OPENAI_API_KEY" in out
    assert f"--allow-endpoint {listener.url}" in out.splitlines()[-1]
    assert CANARY not in out  # the key's name is shown, never its value
    # the same endpoint as the eval's model_base_url, not a model arg: refused as well
    log = _doctored(good_log, tmp_path / "evil2.eval", model="openai/gpt-4o-mini",
                    base_url=listener.url, model_args={})  # fmt: skip
    code, out = _reproduce(log, tmp_path / "r2")
    assert code == 2 and listener.requests == [], out
    # consent to another endpoint is no consent to this one
    code, out = _reproduce(log, tmp_path / "r3", "--allow-endpoint", "http://127.0.0.1:9/v1")
    assert code == 2 and listener.requests == [], out
    # with the explicit flag naming it, it proceeds, and the key goes there
    code, out = _reproduce(log, tmp_path / "r4", "--allow-endpoint", listener.url)
    assert listener.requests, out
    assert all(auth == f"Bearer {CANARY}" for _, auth in listener.requests)
    assert "named by you" in out and code in (0, 1, 3), out


def test_the_users_own_base_url_is_consent(good_log, tmp_path, listener, monkeypatch):
    log = _doctored(good_log, tmp_path / "mine.eval", model="openai/gpt-4o-mini",
                    model_args={"base_url": listener.url + "/"})  # fmt: skip
    monkeypatch.setenv("OPENAI_BASE_URL", listener.url)
    code, out = _reproduce(log, tmp_path / "r", "--plan-only")
    assert code == 0 and "(from model_args.base_url; named by you)" in out, out
    assert listener.requests == []  # --plan-only runs nothing


@pytest.mark.parametrize(
    ("args", "where"),
    [
        ({"api_base": "https://collector.example/v1"}, "model_args.api_base"),  # another name
        ({"host": "10.0.0.7:8000"}, "model_args.host"),  # no scheme, named as an endpoint
        ({"answer": "1", "upstream": "wss://collector.example/ws"}, "model_args.upstream"),
        (
            {"extra_body": {"route": [{"base_url": "collector.example"}]}},
            "model_args.extra_body.route.base_url",
        ),  # nested in a dict and a list
    ],
)
def test_any_endpoint_a_log_names_is_refused(good_log, tmp_path, args, where):
    log = _doctored(good_log, tmp_path / "e.eval", model_args=args)
    code, out = _reproduce(log, tmp_path / "r", "--plan-only")
    assert code == 2 and f"the log's {where} sends the data's prompts" in out, out
    # a task argument that is a URL too (a judge's endpoint)
    log = _doctored(good_log, tmp_path / "t.eval", task_args={"judge_url": "http://x.example"})
    code, out = _reproduce(log, tmp_path / "r", "--plan-only")
    assert code == 2 and "task_args.judge_url" in out, out


def test_a_path_outside_the_new_log_folder_is_refused_and_untouched(good_log, tmp_path):
    """The issue's case (trace= a user file), then the same through other spellings."""
    notes = tmp_path / "home" / "notes.md"
    notes.parent.mkdir()
    notes.write_text("my notes\n")
    spellings = {
        "trace": str(notes),  # absolute
        "outputs_file": "../home/notes.md",  # relative, up out of the working folder
        "cache": "~/notes.md",  # the home folder
        "x": f"file://{notes}",  # a file: URL
    }
    for name, value in spellings.items():
        log = _doctored(good_log, tmp_path / f"{name}.eval", model_args={"answer": "1",
                        name: value})  # fmt: skip
        code, out = _reproduce(log, tmp_path / "w" / name)
        assert code == 2, (name, out)
        assert f"model_args.{name}" in out and "outside the new log folder" in out, out
        assert "--allow-path" in out.splitlines()[-1]
    assert notes.read_text() == "my notes\n"
    assert not (tmp_path / "w").exists()  # and no log folder was made


@pytest.mark.long  # a whole run (~1.5 s); the refusals above run nothing
def test_a_path_named_on_the_command_line_is_used(good_log, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    log = _doctored(good_log, tmp_path / "ok.eval", model_args={"answer": "1",
                    "trace": str(notes)})  # fmt: skip
    code, out = _reproduce(log, tmp_path / "ok", "--allow-path", str(notes))
    assert code != 2 and "allowed by you" in out, out
    assert notes.read_text().startswith("my notes\n") and len(notes.read_text()) > 9


def test_a_long_wait_is_named_before_it_starts(good_log, tmp_path):
    log = _doctored(good_log, tmp_path / "slow.eval", model_args={"answer": "1", "delay": 3600})
    code, out = _reproduce(log, tmp_path / "r")
    assert code == 2, out
    assert "time      at least 3,600 s" in out and "--max-wait 3600" in out.splitlines()[-1]
    code, out = _reproduce(log, tmp_path / "r", "--max-wait", "3600", "--plan-only")
    assert code == 0, out
    # 40 calls, 4 at once: ten rounds of 100 s
    log = _doctored(good_log, tmp_path / "slow2.eval",
                    model_args={"answer": "1", "delay": "100", "connections": 4})  # fmt: skip
    code, out = _reproduce(log, tmp_path / "r", "--limit", "40", "--plan-only")
    assert code == 2 and "at least 1,000 s" in out, out
    code, out = _reproduce(log, tmp_path / "r", "--max-wait", "nan", "--plan-only")
    assert code == 2 and "--max-wait must be" in out, out


def test_the_plan_is_inert_and_complete(good_log, tmp_path):
    log = _doctored(good_log, tmp_path / "esc.eval",
                    model_args={"answer": "1", "trace": "/tmp/\x1b[2Jx\nforged"})  # fmt: skip
    code, out = _reproduce(log, tmp_path / "r", "--plan-only")
    assert code == 2 and "\x1b" not in out and "\\x1b[2Jx\\nforged" in out, out
    code, out = _reproduce(good_log, tmp_path / "r", "--plan-only")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[1].startswith("  model     scripted/x (provider scripted)")
    assert any(line.startswith("  writes    ") and line.endswith("(the new log folder)")
               for line in lines)  # fmt: skip
    assert any(line.startswith("  limits    samples 3, epochs 1") for line in lines)
