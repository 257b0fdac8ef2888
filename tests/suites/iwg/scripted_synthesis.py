"""Files for a scripted synthesis run: seeds, and the Scout's, Wrapper's and committee's replies.

The replies are written from generated instances, so a synthesised instance can be compared
with the one it was made from.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.suites.iwg.schema import BenchmarkInstance, to_dict


def scout_reply(inst: BenchmarkInstance) -> str:
    steps = [
        {
            "id": m.id,
            "description": m.description,
            "agent": m.assigned_agent,
            "capability": m.required_capability,
            "depends_on": list(m.dependencies),
            "checkpoint_hint": m.checkpoint_hint,
            "is_extension": m.is_extension,
        }
        for m in inst.workflow
    ]
    return "Here is the plan:\n```json\n" + json.dumps({"steps": steps}) + "\n```"


def wrapper_reply(inst: BenchmarkInstance) -> str:
    envs = [
        {
            "step": m.id,
            "tool_prompt": e.tool_prompt,
            "tool_output": e.tool_output,
            "checkpoint": {
                "type": e.checkpoint.type,
                "expected_value": e.checkpoint.expected_value,
                "verification_prompt": e.checkpoint.verification_prompt,
            },
        }
        for m, e in zip(inst.workflow, inst.environments, strict=True)
    ]
    plans = {p.step_index: p.plan for p in inst.gold_recovery_plans}
    exceptions = [
        {
            "step": inst.workflow[s.step_index].id,
            "kind": s.kind,
            "message": s.message,
            "recovery": plans[s.step_index],
        }
        for s in inst.exception_scenarios
    ]
    return json.dumps({"environments": envs, "exceptions": exceptions})


def write_files(
    folder: Path, instances: list[BenchmarkInstance], *, reject: str = "", cyclic: str = ""
) -> dict[str, Path]:
    """seeds.jsonl, scout.jsonl, wrapper.jsonl, committee.jsonl under `folder`.

    The committee votes no on the instance `reject`; the Scout plans a cycle for `cyclic`.
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = {k: folder / f"{k}.jsonl" for k in ("seeds", "scout", "wrapper", "committee")}
    lines: dict[str, list[str]] = {k: [] for k in paths}
    for inst in instances:
        lines["seeds"].append(json.dumps(to_dict(inst.seed_data)))
        scout = scout_reply(inst)
        if inst.id == cyclic:
            scout = scout.replace('"depends_on": []', f'"depends_on": ["{inst.workflow[-1].id}"]')
        lines["scout"].append(json.dumps({"id": inst.id, "output": scout}))
        lines["wrapper"].append(json.dumps({"id": inst.id, "output": wrapper_reply(inst)}))
        ok = inst.id != reject
        verdict = {
            "solvable": ok,
            "consistent": ok,
            "reasons": [] if ok else ["checkpoint 2 is wrong"],
        }
        lines["committee"].append(json.dumps({"id": inst.id, "output": json.dumps(verdict)}))
    for key, path in paths.items():
        path.write_text("\n".join(lines[key]) + "\n")
    return paths
