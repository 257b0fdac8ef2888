"""The task folder an agent gets, inside its sandbox at /work.

- `base_model/`: the base checkpoint;
- `data/train.jsonl` (allowed for training) and `data/val.jsonl` (for `evaluate.py`); never
  the test split;
- `evaluate.py` and `templates/`: the agent's copy of an evaluator, read-only (mode 0444), on
  the validation split; the final score never comes from it;
- `timer.sh`: prints the time left;
- `.bash_profile`: puts the harness's Python first on PATH and keeps Hugging Face offline.
"""

from __future__ import annotations

import json
from pathlib import Path

from inspect_ai.util import SandboxEnvironment

from harness.suites.posttrainbench.anticheat import sha256_bytes
from harness.suites.posttrainbench.benchmarks import Splits, rows
from harness.suites.posttrainbench.tiny import CHAT_TEMPLATE

EVALUATE_PY = '''\
"""Score a model folder on the validation split: greedy answers, exact match.

python evaluate.py [--model final_model] [--data data/val.jsonl] [--max-tokens 16]
"""

import argparse
import json

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="final_model")
parser.add_argument("--data", default="data/val.jsonl")
parser.add_argument("--max-tokens", type=int, default=16)
args = parser.parse_args()
torch.set_num_threads(1)
tok = AutoTokenizer.from_pretrained(args.model, local_files_only=True)
tok.padding_side = "left"  # a decoder-only model generates after the prompt's last token
model = AutoModelForCausalLM.from_pretrained(args.model, local_files_only=True).eval()
items = [json.loads(line) for line in open(args.data) if line.strip()]
correct = 0
for start in range(0, len(items), 32):
    batch = items[start : start + 32]
    enc = tok([b["prompt"] for b in batch], return_tensors="pt", padding=True,
              add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=args.max_tokens, do_sample=False,
                             pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    for item, ids in zip(batch, out):
        text = tok.decode(ids[enc["input_ids"].shape[1]:], skip_special_tokens=True)
        correct += text.split("\\n", 1)[0].strip() == item["completion"]
print(json.dumps({"accuracy": correct / len(items), "n": len(items)}))
'''

TIMER_SH = """\
#!/bin/sh
# The time left for this run.
left=$(( {deadline} - $(date +%s) ))
[ "$left" -lt 0 ] && left=0
echo "$((left / 60)) min $((left % 60)) s left"
"""

BASH_PROFILE = """\
export PATH={bin_dir}:$PATH
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export HF_HOME=/work/.cache/huggingface
"""

EVALUATOR_FILES = ("evaluate.py", "templates/chat_template.jinja")


def _jsonl(items: list[dict[str, str]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in items)


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every regular file of a checkpoint folder, by name."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


async def write_task_folder(
    box: SandboxEnvironment, base: Path, parts: Splits, deadline: int, bin_dir: str
) -> dict[str, str]:
    """Write the task folder; returns the SHA-256 of each evaluator file as written."""
    for name, data in folder_files(base).items():
        if name != "harness_tiny.json":
            await box.write_file(f"base_model/{name}", data)
    await box.write_file("data/train.jsonl", _jsonl(rows(parts.train)))
    await box.write_file("data/val.jsonl", _jsonl(rows(parts.val)))
    await box.write_file("evaluate.py", EVALUATE_PY)
    await box.write_file("templates/chat_template.jinja", CHAT_TEMPLATE)
    await box.write_file("timer.sh", TIMER_SH.format(deadline=deadline))
    await box.write_file(".bash_profile", BASH_PROFILE.format(bin_dir=bin_dir))
    done = await box.exec(
        ["chmod", "0444", "evaluate.py", "templates/chat_template.jinja"], timeout=60
    )
    done2 = await box.exec(["chmod", "0555", "timer.sh"], timeout=60)
    if not (done.success and done2.success):
        raise RuntimeError(f"could not set the task folder's modes: {done.stderr}{done2.stderr}")
    return {
        "evaluate.py": sha256_bytes(EVALUATE_PY.encode()),
        "templates/chat_template.jinja": sha256_bytes(CHAT_TEMPLATE.encode()),
    }
