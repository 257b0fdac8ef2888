"""`harness sage score`: reference-only and judge-based scores, statistics and bad input."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

TOPICS = {
    "sport": "football goal match team player score league coach stadium referee",
    "cooking": "recipe oven flour butter sugar bake pan sauce garlic onion",
    "finance": "bank loan interest rate stock market bond tax invest budget",
}


def _items(n_per_topic: int = 40, wrong: float = 0.2, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for topic, vocab in TOPICS.items():
        words = vocab.split()
        every = " ".join(TOPICS.values()).split()
        for i in range(n_per_topic):  # 3 words of its topic, 5 from any: neighbours are noisy
            text = " ".join([rng.choice(words) for _ in range(3)] + rng.sample(every, 5))
            is_wrong = rng.random() < wrong
            annotation = rng.choice([t for t in TOPICS if t != topic]) if is_wrong else topic
            rows.append({"id": f"{topic}-{i}", "text": text, "annotation": annotation,
                         "label_correct": 0 if is_wrong else 1})  # fmt: skip
    return rows


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", "sage", "score", *args],
                          capture_output=True, text=True)  # fmt: skip


def test_reference_only_detects_errors_with_an_interval(tmp_path):
    data = _write(tmp_path / "d.jsonl", _items())
    out = tmp_path / "scores.jsonl"
    r = _run("--data", str(data), "--k", "5", "--embedder", "hashing", "--json", "-o", str(out))
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    a = res["auroc_reference_only"]
    assert res["method"] == "SAGE (reconstructed)" and res["n"] == 120
    assert 0.7 < a["estimate"] < 1.0 and a["ci_low"] < a["estimate"] < a["ci_high"]
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 120 and all(len(x["neighbours"]) == 5 for x in lines)
    assert all(x["id"] not in x["neighbours"] for x in lines)  # never its own reference


def test_judge_direct_and_anchored_with_factors(tmp_path):
    rows = _items(20)
    data = _write(tmp_path / "d.jsonl", rows)
    rng = random.Random(1)
    script = []
    for row in rows:  # the direct judge is noisy; with a reference it is right more often
        right = row["label_correct"] == 1

        def say(p_right: float, right: bool = right) -> str:
            return (
                ("Yes" if right else "No") if rng.random() < p_right else ("No" if right else "Yes")
            )

        script.append({"id": f"direct:{row['id']}", "output": say(0.6)})
        script += [{"id": f"ref:{row['id']}:{j}", "output": say(0.8)} for j in range(3)]
    outputs = _write(tmp_path / "script.jsonl", script)
    r = _run("--data", str(data), "--k", "3", "--embedder", "hashing", "--json",
             "--judge", "scripted/judge", "-M", f"outputs={outputs}",
             "--log-dir", str(tmp_path / "logs"))  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    assert res["prompt_version"] == "sage-judge-v1"
    assert res["auroc_sage"]["estimate"] > res["auroc_direct"]["estimate"]
    f = res["factors"]
    assert f["delta1"] > 0 > f["delta0"] and f["shift_factor"] > 1
    assert abs(f["predicted_auroc_sage"] - f["observed_auroc_sage"]) < 0.15


def test_bad_input_is_one_line_with_exit_2(tmp_path):
    empty = _write(tmp_path / "empty.jsonl", [])
    missing = _write(tmp_path / "missing.jsonl", [{"id": 1, "text": "x"}])
    small = _write(tmp_path / "small.jsonl", _items(2, wrong=0.0))
    for args, needle in [
        (["--data", str(empty)], "empty"),
        (["--data", str(missing)], "missing field 'annotation'"),
        (["--data", str(small), "--k", "6"], "k=6"),
        (["--data", str(tmp_path / "nope.jsonl")], "no such file"),
    ]:
        r = _run(*args, "--embedder", "hashing")
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
