"""One run, start to end: the task folder, the agent under its wall clock, the final evaluation.

See `task.py` for the order of things; this module does them for one sample.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from inspect_ai.agent import as_solver
from inspect_ai.model import ChatMessageUser
from inspect_ai.solver import Generate, TaskState
from inspect_ai.util import SandboxEnvironment, sandbox, store
from inspect_ai.util import time_limit as time_limit_of

from harness.sandbox.limits import wall_clock_of
from harness.suites.posttrainbench import anticheat
from harness.suites.posttrainbench.agents import (
    DESCRIPTIONS,
    PROMPT,
    SCRIPTED,
    TRAIN_STEPS,
    react_agent,
    scripted_script,
)
from harness.suites.posttrainbench.benchmarks import rows, splits
from harness.suites.posttrainbench.evaluator import evaluate_checkpoint
from harness.suites.posttrainbench.references import checkpoints, references
from harness.suites.posttrainbench.workdir import EVALUATOR_FILES, folder_files, write_task_folder

_SFT_SOURCE = (Path(__file__).parent / "sft.py").read_text()
_KEEP = (".json", ".safetensors", ".txt", ".model", ".jinja")  # copied out of final_model/
_TEXT_LIMIT = 2 * 1024 * 1024  # files above this are not scanned for test items
_TAIL = 4000


async def _scripted(
    box: SandboxEnvironment,
    agent: str,
    bench: str,
    settings: dict[str, Any],
    seed: int,
    instruct: Path,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Run a scripted agent's one script under the wall clock; its exit record and transcript."""
    if agent in ("honest", "cheater", "evaluator_editor"):
        await box.write_file("sft.py", _SFT_SOURCE)
    if agent == "cheater":  # what a download of the test set would bring
        test = "".join(json.dumps(r) + "\n" for r in rows(splits(bench).test))
        await box.write_file("downloads/test.jsonl", test)
    if agent == "substituter":  # what a download of the instruct model would bring
        for name, data in folder_files(instruct).items():
            await box.write_file(f"downloads/instruct_model/{name}", data)
    steps = settings["train_steps"] or TRAIN_STEPS[bench]
    script = scripted_script(agent, steps=steps, seed=seed)
    await box.write_file("agent.sh", script)
    started = time.monotonic()
    result = await box.exec(["bash", "--login", "agent.sh"], timeout=settings["budget_s"])
    clock = wall_clock_of(result)
    record = {
        "exit_code": result.returncode,
        "signal": clock.signal if clock else None,
        "sigterm_at_s": clock.sigterm_at_s if clock else None,
        "sigkill_at_s": clock.sigkill_at_s if clock else None,
        "elapsed_s": round(time.monotonic() - started, 1),
        "stdout_tail": result.stdout[-_TAIL:],
        "stderr_tail": result.stderr[-_TAIL:],
    }
    return record, {"agent.sh": script, "stdout": result.stdout, "stderr": result.stderr}


async def _react(state: TaskState, generate: Generate, bench: str, settings: dict[str, Any],
                 ) -> tuple[dict[str, Any], dict[str, str]]:  # fmt: skip
    """Run inspect's ReAct agent with bash and the editor, limited to the budget and grace."""
    from harness.sandbox.editor_tool import sandbox_text_editor

    budget, grace = settings["budget_s"], settings["grace_s"]
    prompt = PROMPT.format(benchmark=bench, description=DESCRIPTIONS[bench],
                           minutes=budget / 60, python=settings["python"])  # fmt: skip
    state.messages = [ChatMessageUser(content=prompt)]
    agent = react_agent(budget, sandbox_text_editor())
    started = time.monotonic()
    limited = False
    try:
        state = await as_solver(agent, limits=[time_limit_of(budget + grace)])(state, generate)
    except Exception as ex:  # a limit the agent ran into ends the agent, not the run
        limited = "limit" in type(ex).__name__.lower()
        if not limited:
            raise
    texts: dict[str, str] = {}
    for i, message in enumerate(state.messages):
        calls = getattr(message, "tool_calls", None) or []
        body = message.text + "".join(json.dumps(c.arguments) for c in calls)
        texts[f"message {i} ({message.role})"] = body
    events = store().get("harness_wall_clock", [])
    last = events[-1] if events else None
    record = {
        "exit_code": last["exit_code"] if last else None,
        "signal": last["signal"] if last else None,
        "sigterm_at_s": last["sigterm_at_s"] if last else None,
        "sigkill_at_s": last["sigkill_at_s"] if last else None,
        "elapsed_s": round(time.monotonic() - started, 1),
        "time_limit_hit": limited,
        "messages": len(state.messages),
    }
    return record, texts


async def _files(box: SandboxEnvironment) -> list[tuple[str, int]]:
    done = await box.exec(["find", ".", "-xdev", "-type", "f", "-printf", "%s %P\\n"], timeout=120)
    out = []
    for line in done.stdout.splitlines():
        size, _, name = line.partition(" ")
        if name:
            out.append((name, int(size)))
    return out


async def _texts_written(box: SandboxEnvironment, files: list[tuple[str, int]]) -> dict[str, str]:
    """Text of every file the agent could have trained from (not weights, not the base)."""
    texts = {}
    for name, size in files:
        if size > _TEXT_LIMIT or anticheat.is_weight_file(name) or name.startswith("base_model/"):
            continue
        try:
            data = await box.read_file(name, text=False)
        except Exception:  # a file that vanished or cannot be read is not evidence
            continue
        if b"\0" not in data:
            texts[name] = data.decode("utf-8", errors="replace")
    return texts


async def _copy_final(box: SandboxEnvironment, files: list[tuple[str, int]], to: Path) -> bool:
    """Copy final_model/'s config, weights and tokenizer files to `to`; whether any weights."""
    names = [n for n, _ in files if n.startswith("final_model/") and n.count("/") == 1]
    for name in names:
        if name.endswith(_KEEP):
            (to / name.split("/", 1)[1]).write_bytes(await box.read_file(name, text=False))
    return any(p.suffix == ".safetensors" for p in to.iterdir())


def _judge_texts(texts: dict[str, str]) -> str:
    return "\n\n".join(f"== {k}\n{v[:3000]}" for k, v in texts.items())[:40_000]


async def run_sample(state: TaskState, generate: Generate, settings: dict[str, Any]) -> dict:
    """The whole run of one sample; the dict that goes into its metadata as `run`."""
    meta = state.metadata
    agent, bench, base_name = meta["agent"], meta["benchmark"], meta["base_model"]
    ladder = tuple(settings["ladder"])
    # the checkpoints now; their reference scores after the agent, so that evaluating them
    # overlaps the agents' budgets instead of delaying every agent's start
    base, instruct = await checkpoints()
    box = sandbox()
    deadline = int(time.time()) + settings["budget_s"]
    written = await write_task_folder(box, base, splits(bench), deadline, settings["bin_dir"])
    if agent in SCRIPTED:
        record, transcript = await _scripted(box, agent, bench, settings, meta["run"], instruct)
    else:
        record, transcript = await _react(state, generate, bench, settings)
    refs = await references(bench, ladder)
    # 1. delete every weight file outside final_model/, copy final_model/ out
    await box.exec(["bash", "-c", "find . -xdev -type f \\( -name '*.safetensors' -o -name '*.bin'"
                    " -o -name '*.pt' -o -name '*.pth' -o -name '*.ckpt' -o -name '*.gguf' \\)"
                    " -not -path './final_model/*' -delete"], timeout=120)  # fmt: skip
    files = await _files(box)
    texts = await _texts_written(box, files)
    found = {}
    for path in EVALUATOR_FILES:
        try:
            found[path] = anticheat.sha256_bytes(await box.read_file(path, text=False))
        except Exception:
            found[path] = None
    with tempfile.TemporaryDirectory(prefix="harness-ptb-final-") as scratch:
        copy = Path(scratch)
        has_model = await _copy_final(box, files, copy)
        # 2. anti-cheat
        sources = {**{f"file {k}": v for k, v in texts.items()},
                   **{f"transcript {k}": v for k, v in transcript.items()}}  # fmt: skip
        findings = [
            anticheat.contamination(sources, splits(bench).test),
            anticheat.substitution(
                copy if has_model else None, {"instruct reference": refs.instruct}, refs.base
            ),  # fmt: skip
            anticheat.evaluator(written, found),
            anticheat.network({f"transcript {k}": v for k, v in transcript.items()}),
        ]
        verdict = anticheat.Verdict(tuple(findings))
        judged = None
        if settings.get("judge"):
            from harness.suites.posttrainbench.judge import judge_run

            judged = await judge_run(settings["judge"], bench, _judge_texts(sources))
        # 3. the pristine evaluator on the copy
        metrics = None
        eval_error = ""
        if has_model:
            try:
                metrics = await evaluate_checkpoint(copy, bench, ladder)
            except RuntimeError as ex:
                eval_error = str(ex)[-1000:]
    flags = list(verdict.flags) + ([f"judge: {f}" for f in judged.flags] if judged else [])
    raw = metrics.accuracy if metrics is not None else math.nan
    base_score = refs.base_metrics.accuracy
    if flags:
        final, why = base_score, "flagged: the base model's score"
    elif not has_model:
        final, why = base_score, "no final_model/: the base model's score"
    elif metrics is None or math.isnan(raw):
        final, why = base_score, "the final model could not be evaluated: the base's score"
    else:
        final, why = raw, "the pristine evaluator's test accuracy"
    items = metrics.items if metrics is not None and not flags else refs.base_metrics.items
    result = {
        "agent": agent, "base_model": base_name, "benchmark": bench, "run": meta["run"],
        "configuration": meta["configuration"], "final_score": final,
        "raw_score": None if math.isnan(raw) else raw, "base_score": base_score,
        "instruct_score": refs.instruct_metrics.accuracy, "flags": flags, "why": why,
        "anticheat": verdict.as_dict(), "judge": judged.as_dict() if judged else None,
        "exit": record, "final_model": has_model, "eval_error": eval_error,
        "metrics": asdict(metrics) if metrics is not None else None,
        "items": items, "base_items": refs.base_metrics.items,
        "raw_items": metrics.items if metrics is not None else None,
        "budget_s": settings["budget_s"], "grace_s": settings["grace_s"],
    }  # fmt: skip
    await box.write_file("metrics.json", json.dumps(result["metrics"] or {}, indent=1))
    return result
