"""The tasks of `harness eval --until decided`: one copy per model, one shared order and family.

See `harness.board._live` for the stopping rule. Here each task of the suite is made once per
model, its items put in one seeded random order (the same for every model, so pairs stay
paired), and bound to its model and to a `ModelStopper` of the task's `LiveFamily`. The data's
full-content hash (`harness.eval._data_content`: file and image bytes read) goes into the eval
metadata, since the models' logs hold different items. `--active` checks its history first
(`harness.board._history_check`): the same questions under the same ids, and a new model.

Where the suite's design nests items in clusters (`Design.cluster`, a sample metadata key; a
sample without it is a cluster of its own, as in the engine), the order is the clusters' in a
seeded order with each cluster's items together in the dataset's order, and the family takes
one observation per completed cluster. `--active` chooses items one at a time, which a
clustered design cannot take: `harness.eval._checks.check` refuses it in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.board._family import cluster_visit
from harness.board._live import LiveFamily, ModelStopper
from harness.errors import HarnessUsageError
from harness.eval import EvalRequest
from harness.logs import DesignLookup
from harness.registry import register

# The family-wise level of a live run's decisions (Bonferroni over its pairs); the same as the
# engine's default alpha, so a decided run and a full run answer at one level.
ALPHA = 0.05


def _content_hash(samples: Sequence[Any]) -> str:
    """The identity's data hash over the samples' full content, as a full run records it."""
    from harness.eval import IDENTITY_DIGITS, sample_digests, whole_hash

    return whole_hash(sample_digests(samples))[:IDENTITY_DIGITS]


def cluster_order(samples: Sequence[Any], cluster: str, seed: int) -> tuple[list[Any], list[str]]:
    """The samples cluster by cluster (clusters in a seeded order), and each one's cluster."""
    labels = [str((s.metadata or {}).get(cluster, s.id)) for s in samples]
    visit = cluster_visit(labels, seed)
    return [samples[i] for i in visit], [labels[i] for i in visit]


def _clustered_budget(req: EvalRequest, labels: Sequence[str], cluster: str) -> None:
    """The budget must hold the first cluster of the order, or nothing could be asked."""
    first = next((i for i, c in enumerate(labels) if c != labels[0]), len(labels))
    if req.budget is not None and req.budget < first:
        raise HarnessUsageError(f"--budget {req.budget} items is smaller than the first "
                                f"{cluster!r} cluster of the order ({first} items); a clustered "
                                "design is asked whole clusters")  # fmt: skip


def decided_tasks(
    fresh: Callable[[], list[Any]], models: Sequence[Any], req: EvalRequest, *,
    designs: DesignLookup, cluster: str | None = None,
) -> tuple[list[Any], dict[str, Any]]:  # fmt: skip
    """One task per (task, model), with stoppers; and the eval metadata to record.

    `cluster` is the design's cluster key, where its items nest (see the module docstring);
    `designs` gives a suite's design by name, to read `--active`'s history logs with (the
    catalog's, which the eval library passes).
    """
    from inspect_ai import task_with

    if req.active:
        return _active_tasks(fresh, models[0], req, designs)
    per_model = [fresh() for _ in models]
    out: list[Any] = []
    orders: dict[str, list[str]] = {}
    hashes: dict[str, str] = {}
    for index in range(len(per_model[0])):
        order: list[str] = []
        live: LiveFamily | None = None
        for model, tasks in zip(models, per_model, strict=True):
            task = tasks[index]
            labels: list[str] | None = None
            if cluster:
                samples, labels = cluster_order(list(task.dataset), cluster, req.order_seed)
                task = task_with(task, dataset=samples)
                labels = labels[: req.limit or None]
                _clustered_budget(req, labels, cluster)
            else:
                task.dataset.shuffle(seed=req.order_seed)
            ids = [str(s.id) for s in task.dataset][: req.limit or None]
            if live is None:
                order = ids
                live = LiveFamily([str(m) for m in models], order, alpha=ALPHA,
                                  margin=req.margin, budget=req.budget, width=req.width,
                                  clusters=labels, cluster=cluster)  # fmt: skip
                name = str(task.name).split("/")[-1]  # as the log's identity names the task
                orders[name] = order
                hashes[name] = _content_hash(list(task.dataset)[: len(order)])
            out.append(task_with(task, model=model, early_stopping=ModelStopper(live, str(model))))
    meta = {
        "harness_sequential": {
            "until": "decided", "alpha": ALPHA, "margin": req.margin, "budget": req.budget,
            "order_seed": req.order_seed, "width": req.width, "orders": orders,
            "method": "betting confidence sequences, Bonferroni over pairs, anytime-valid"
            + (f"; one observation per completed {cluster!r} cluster (its mean)" if cluster
               else ""),
            **({"cluster": cluster} if cluster else {}),
        },
        "harness_data_hash": hashes,
    }  # fmt: skip
    return out, meta


def _active_tasks(fresh: Callable[[], list[Any]], model: Any, req: EvalRequest,
                  designs: DesignLookup) -> tuple[list[Any], dict[str, Any]]:  # fmt: skip
    """One task per suite task for the added model, each with an `ActiveStopper`."""
    from inspect_ai import task_with

    from harness.board._export import board_from_logs
    from harness.board._history_check import (
        check_new_model,
        check_same_questions,
        history_records,
    )
    from harness.board._live_active import RECONSTRUCTED, ActiveLive, ActiveStopper
    from harness.logs import log_files

    log_files(req.history)  # a missing folder is one line
    out: list[Any] = []
    orders: dict[str, list[str]] = {}
    hashes: dict[str, str] = {}
    for task in fresh():
        task.dataset.shuffle(seed=req.order_seed)
        name = str(task.name).split("/")[-1]
        ids = [str(s.id) for s in task.dataset][: req.limit or None]
        try:
            history, _ = board_from_logs(req.history, designs, task=name)
        except HarnessUsageError as ex:
            raise HarnessUsageError(f"--active: no usable history for task {name!r} under "
                                    f"{', '.join(req.history)}: {ex}") from None  # fmt: skip
        if str(model) in history.models:
            raise HarnessUsageError(f"--active: {model} is already in the history; the added "
                                    "model must be a new one")  # fmt: skip
        records = history_records(req.history, name, history.models, designs)
        check_new_model(str(model), req.model_args, records)
        check_same_questions(list(task.dataset)[: len(ids)], records)
        shared = [i for i in ids if i in set(history.items)]
        if not shared:
            raise HarnessUsageError(f"--active: the history's items for task {name!r} share no "
                                    "sample id with this run's")  # fmt: skip
        live = ActiveLive(str(model), ids, history, alpha=ALPHA, margin=req.margin,
                          budget=req.budget, seed=req.order_seed)  # fmt: skip
        orders[name] = ids
        hashes[name] = _content_hash(list(task.dataset)[: len(ids)])
        out.append(task_with(task, model=model, early_stopping=ActiveStopper(live)))
    meta = {
        "harness_sequential": {
            "until": "decided", "alpha": ALPHA, "margin": req.margin, "budget": req.budget,
            "order_seed": req.order_seed, "width": None, "orders": orders, "active": True,
            "method": "active selection weighted by its probability; betting confidence "
            "sequences, Bonferroni over pairs, anytime-valid",
            "reconstructed": RECONSTRUCTED,
        },
        "harness_data_hash": hashes,
    }  # fmt: skip
    return out, meta


register("until", "decided", decided_tasks)
