"""Manifest hashes: each changes when its part changes (one sample, the prompt, the scorer's
code) and stays put otherwise; the manifest stays out of the run identity and holds no key."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from inspect_ai.dataset import Sample

from harness.eval._data_content import data_manifest
from harness.eval._manifest import code_hash, judge_manifest, outputs_manifest

SCORER = """
from inspect_ai.scorer import Score, accuracy, scorer


def _clean(text):
    return text.strip()


@scorer(metrics=[accuracy()])
def exact():
    async def score(state, target):
        return Score(value=_clean(state.output.completion) == target.text)

    return score
"""


def _samples(**change: str) -> list[Sample]:
    inputs = {"a": "1+1=", "b": "2+2=", "c": "3+3="} | change
    return [Sample(id=k, input=v, target=str(2 * (i + 1))) for i, (k, v) in
            enumerate(inputs.items())]  # fmt: skip


def test_data_hash_changes_with_one_sample_and_only_that_sample():
    base = data_manifest(_samples())
    assert base == data_manifest(_samples())  # the same data, the same hashes
    changed = data_manifest(_samples(b="2+2 ="))
    assert changed["sha256"] != base["sha256"] and len(changed["sha256"]) == 64
    differ = [k for k in base["per_sample"] if base["per_sample"][k] != changed["per_sample"][k]]
    assert differ == ["b"]
    target = _samples()
    target[0].target = "3"
    assert data_manifest(target)["sha256"] != base["sha256"]


def test_the_identitys_data_hash_is_the_manifests_full_content_hash():
    from harness.eval._manifest import data_identity

    data = data_manifest(_samples())
    found = data_identity({"tasks": {"t": {"data": data}}})
    assert found == {"t": data["sha256"][:12]}


def test_the_data_hash_reads_images_by_their_bytes_and_files_by_content(tmp_path):
    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText

    picture = tmp_path / "p.png"
    picture.write_bytes(b"\x89PNG one")

    def sample() -> Sample:
        parts = [ContentText(text="what is this?"), ContentImage(image=str(picture))]
        return Sample(id="a", input=[ChatMessageUser(content=parts)], target="cat",
                      files={"notes.txt": str(picture)})  # fmt: skip

    first = data_manifest([sample()])
    assert data_manifest([sample()])["sha256"] == first["sha256"]  # message ids left out
    picture.write_bytes(b"\x89PNG two")  # the same name, other bytes
    assert data_manifest([sample()])["sha256"] != first["sha256"]


def test_the_code_hash_names_the_modules_a_scorer_calls_and_their_packages():
    from harness.eval._code_closure import code_identity
    from harness.scorers.math_answer import math_answer
    from harness.suites.aime import aime2024

    found = code_identity([aime2024, math_answer()])
    assert {"harness/suites/aime.py", "harness/scorers/math_answer.py",
            "harness/answer_extraction.py"} <= set(found["files"])  # fmt: skip
    assert "harness/eval/_runner.py" not in found["files"]  # only what the task imports
    assert {"math_verify", "sympy", "inspect_ai", "python"} <= set(found["packages"])


def _plan(template: str) -> SimpleNamespace:
    steps = [SimpleNamespace(solver="prompt_template", params={"template": template}),
             SimpleNamespace(solver="generate", params={})]  # fmt: skip
    return SimpleNamespace(plan=SimpleNamespace(steps=steps), samples=[])


def test_prompt_hash_changes_with_the_template_only():
    a = outputs_manifest(_plan("Solve: {prompt}"))
    assert a["prompt"] == outputs_manifest(_plan("Solve: {prompt}"))["prompt"]
    assert a["prompt"] != outputs_manifest(_plan("Solve this: {prompt}"))["prompt"]


def _load(folder: Path, name: str, text: str):
    (folder / f"{name}.py").write_text(text)
    sys.modules.pop(name, None)
    importlib.invalidate_caches()
    return importlib.import_module(name)


def test_scorer_code_hash_changes_with_its_source_and_not_otherwise(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    first = code_hash([_load(tmp_path, "scorer_mod", SCORER).exact()])
    (tmp_path / "unrelated.py").write_text("X = 1\n")  # another file: no change
    assert code_hash([_load(tmp_path, "scorer_mod", SCORER).exact()]) == first
    # the same source under another module name (a checkout elsewhere) hashes the same
    assert code_hash([_load(tmp_path, "scorer_copy", SCORER).exact()]) == first
    edited = SCORER.replace("text.strip()", "text.strip().lower()")  # a helper it calls
    assert code_hash([_load(tmp_path, "scorer_mod", edited).exact()]) != first


def test_judge_models_are_named_and_labels_hashed_but_keys_redacted(tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "a", "human": 1}\n')
    found = judge_manifest({"judge_model": "openai/gpt-4o-mini", "human_labels": str(labels),
                            "judge_api_key": "sk-abcdefghijklmnop", "n": 3})  # fmt: skip
    assert found["models"]["judge_model"] == '"openai/gpt-4o-mini"'
    assert "sk-abc" not in json.dumps(found) and "redacted" in found["models"]["judge_api_key"]
    before = found["labels"]["human_labels"]
    labels.write_text('{"id": "a", "human": 0}\n')
    assert judge_manifest({"human_labels": str(labels)})["labels"]["human_labels"] != before
    assert judge_manifest({"n": 3}) == {}


@pytest.mark.slow
def test_a_run_writes_its_manifest_outside_the_identity(tmp_path):
    """One scripted eval: the manifest is in the log, the outputs hash written after the run,
    `harness manifest` prints it, and the run's identity is what it was without it."""
    from click.testing import CliRunner

    from harness.cli import main
    from harness.eval import EvalRequest, run
    from harness.eval._manifest import MANIFEST_KEY, OUTPUTS_KEY, manifest_of
    from harness.logs import identity_of, read_log

    request = EvalRequest(suite="arith", models=("scripted/x",), limit=4, display="none",
                          model_args={"answer": "4", "api_key": "sk-abcdefghijklmnopq"},
                          log_dir=str(tmp_path / "logs"))  # fmt: skip
    ok, _, [record] = run(request)
    assert ok
    manifest = manifest_of(record)
    assert manifest is not None and manifest.outputs and manifest.prompt
    assert manifest.data["n"] == 4 and len(manifest.output_samples) == 4
    assert {"scorer", "solver", "task", "model", "files"} <= set(manifest.code)
    assert record.metadata["harness_data_hash"]["arith"] == record.identity.sample_hash
    assert manifest.data["sha256"].startswith(record.identity.sample_hash)
    assert manifest.packages["inspect_ai"] and "cpu" in manifest.hardware
    assert OUTPUTS_KEY not in record.metadata and OUTPUTS_KEY in record.current_metadata
    spec_without = {"task": "arith", "model": "scripted/x", "metadata": {"harness_suite": "arith"}}
    spec_with = {
        **spec_without,
        "metadata": {**spec_without["metadata"], MANIFEST_KEY: record.metadata[MANIFEST_KEY]},
    }
    assert identity_of(spec_with, ["a"]) == identity_of(spec_without, ["a"])
    printed = CliRunner().invoke(main, ["manifest", record.path])
    assert printed.exit_code == 0, printed.output
    shown = json.loads(printed.output)
    assert shown["outputs"] == manifest.outputs and shown["digest"] == manifest.digest
    assert "sk-abcdef" not in printed.output and "sk-abcdef" not in json.dumps(
        record.metadata[MANIFEST_KEY]
    )  # fmt: skip
    again = read_log(record.path)
    assert manifest_of(again) == manifest  # read back the same
