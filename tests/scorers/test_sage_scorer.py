"""The `sage` inspect scorer: calls per sample, references without the sample itself, metadata."""

import json
from collections import Counter

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import get_model
from inspect_ai.solver import generate

from harness.models.sample_context import bind_sample
from harness.scorers.sage import sage


def test_sage_scorer_calls_the_judge_k_plus_one_times(tmp_path):
    pool = tmp_path / "pool.jsonl"
    rows = [{"id": f"p{i}", "text": f"football match number {i}", "annotation": "sport",
             "label_correct": int(i % 4 != 0)} for i in range(12)]  # fmt: skip
    pool.write_text("".join(json.dumps(r) + "\n" for r in rows))
    trace = tmp_path / "trace.txt"
    judge = get_model("scripted/judge", answer="Yes", trace=str(trace))
    samples = [Sample(id=f"p{i}", input=f"football match number {i}") for i in range(4)]
    task = Task(
        dataset=MemoryDataset(samples),
        solver=[bind_sample(), generate()],  # scripted models trace calls by sample
        scorer=sage(str(pool), k=3, embedder="hashing"),
    )
    [log] = eval(task, model="scripted/x", model_args={"answer": "sport"},
                 model_roles={"judge": judge}, log_dir=str(tmp_path / "logs"),
                 display="none")  # fmt: skip
    assert log.status == "success", log.error
    calls = Counter(trace.read_text().split())
    assert calls == {f"p{i}": 4 for i in range(4)}  # one direct and k=3 anchored calls each
    verified = {r["id"] for r in rows if r["label_correct"] == 1}
    for s in log.samples:
        score = next(iter(s.scores.values()))
        assert score.value == 1.0 and score.metadata["method"] == "SAGE (reconstructed)"
        refs = score.metadata["references"]
        assert len(refs) == 3 and s.id not in refs and set(refs) <= verified
        assert score.metadata["prompt_version"] == "sage-judge-v1"
