"""`harness eval --until decided`: the pair family run live, through inspect's EarlyStopping.

Every model of a run gets its own copy of a task whose items are in one seeded random order,
shared by all models so that pairs stay paired, and its own `ModelStopper`, which inspect asks
before each sample (`schedule_sample`) and tells when one is done (`complete_sample`). The
stoppers of one task share a `LiveFamily`:

- item k of the order is observed (`harness.board._family.PairFamily`) once every model still
  being asked has scored it; an errored sample, or a score that cannot be read, is 0 (wrong);
- a model may run at most `lag` items ahead of the last item observed, so that decisions reach
  it before it has asked everything;
- a model whose pairs are all resolved, or that reached `--budget`, is asked nothing more: each
  skipped sample carries its reason in the log's early-stopping summary;
- the decisions (each pair's resolution, the items it took, its anytime-valid confidence
  sequence) are written to that summary's metadata, which the report and `--json` print.

The confidence sequences are betting CSs at alpha / pairs (Bonferroni), valid at the data-
dependent stopping time, with bets tuned to the budget or, without one, to the order's length
(`harness.stats._bets`); a fixed-n interval is never printed for these runs.

Where the suite's design nests items in clusters (`Design.cluster`), the order visits clusters
in a seeded order, a cluster's items together, and the family takes one observation per
completed cluster, each model's mean over its items (`harness.board._family.ClusterMeans`):
the clusters are the independent draws, and the decisions are about the mean of cluster means.
Who is asked changes only when a cluster completes; `--budget` counts items, and a model is
asked only whole clusters that fit in it.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

from harness.board._family import ClusterMeans, PairFamily, cluster_ends, whole_clusters
from harness.logs import parse_score
from harness.stats import bonferroni_level

LAG = 4  # items a model may run ahead of the last item observed


class WidthFamily:
    """One model with nothing to compare: asked until its CS is narrower than `width`.

    The same interface as `PairFamily` (`active`, `observe`, `n`, `model_items`, `states`); the
    interval is a betting CS for the mean score (Waudby-Smith and Ramdas 2024), so stopping on
    its width keeps it valid.
    """

    def __init__(self, model: str, *, alpha: float, width: float, budget: int | None) -> None:
        """A single model's stopping rule."""
        from harness.stats import BettingCS

        self.model, self.width, self.budget = model, width, budget
        self.cs = BettingCS(alpha=alpha, kind="mean")
        self.n = 0
        self._asked = True

    def active(self) -> tuple[str, ...]:
        """The model while its interval is wider than `width` and the budget lasts."""
        return (self.model,) if self._asked else ()

    def observe(self, scores: dict[str, float]) -> None:
        """One item's score."""
        self.cs.update(scores[self.model])
        self.n += 1
        narrow = self.cs.interval().width < self.width
        self._asked = not narrow and (self.budget is None or self.n < self.budget)

    def model_items(self) -> dict[str, int]:
        """Items the model was asked."""
        return {self.model: self.n}

    def states(self) -> tuple[Any, ...]:
        """No pairs."""
        return ()


class LiveFamily:
    """The state one task's stoppers share: the order, the scores so far, the pair family."""

    def __init__(
        self,
        models: Sequence[str],
        order: Sequence[str],
        *,
        alpha: float,
        margin: float,
        budget: int | None,
        width: float | None = None,
        lag: int = LAG,
        clusters: Sequence[str] | None = None,
        cluster: str | None = None,
    ) -> None:
        """A family over `models` (one model: stopped by `width`), fed items in `order`.

        `clusters` names each item's cluster (in `order`, a cluster's items together) where
        the design nests items, and `cluster` the design's key; the family then takes one
        observation per completed cluster.
        """
        self.models = tuple(models)
        self.order = tuple(order)
        self.position = {item: i for i, item in enumerate(self.order)}
        self.cluster = cluster
        ends = None if clusters is None else cluster_ends(clusters)
        inner_budget = budget if ends is None else whole_clusters(ends, budget)
        inner: PairFamily | WidthFamily
        if len(self.models) == 1 and width is not None:
            inner = WidthFamily(self.models[0], alpha=alpha, width=width, budget=inner_budget)
        else:
            # bets tuned to the budget, else to every item (or cluster) of the order
            planned = inner_budget or (len(self.order) if ends is None else int(ends.size))
            inner = PairFamily(self.models, alpha=alpha, margin=margin, budget=inner_budget,
                               planned=planned)  # fmt: skip
        self.inner = inner
        self.family: PairFamily | WidthFamily | ClusterMeans = inner
        if clusters is not None:
            self.family = ClusterMeans(inner, self.models, clusters)
        self.alpha, self.margin, self.budget, self.lag = alpha, margin, budget, lag
        self.scores: dict[str, dict[str, float]] = {}
        self.fed = 0
        self._changed: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:  # made in the running loop, on first use
            self._changed = asyncio.Condition()
        return self._changed

    def asked(self, model: str) -> bool:
        """Whether `model` is still being asked."""
        return model in self.family.active()

    def _advance(self) -> None:
        """Observe every item, in order, that each model still asked has scored."""
        while self.fed < len(self.order) and self.family.active():
            item = self.scores.get(self.order[self.fed], {})
            active = self.family.active()
            if not all(m in item for m in active):
                return
            self.family.observe({m: item[m] for m in active})
            self.fed += 1

    async def turn(self, model: str, item: str) -> str | None:
        """Wait until `model` may ask `item`; the reason it may not, or None."""
        changed = self._condition()
        limit = self.position.get(item, 0)
        async with changed:
            await changed.wait_for(lambda: not self.asked(model) or limit < self.fed + self.lag)
        if self.asked(model):
            return None
        if self.inner.budget is not None and self.inner.n >= self.inner.budget:
            return f"budget of {self.budget} items reached"
        if isinstance(self.family, WidthFamily):
            return f"its interval is narrower than {self.family.width:g}"
        return f"every pair of {model} is resolved"

    async def scored(self, model: str, item: str, value: float) -> None:
        """Record `model`'s score on `item` and observe what is complete."""
        self.scores.setdefault(item, {})[model] = value
        changed = self._condition()
        async with changed:
            self._advance()
            changed.notify_all()

    async def finished(self, model: str) -> None:
        """`model` has nothing more to run: observe without it where it is still asked."""
        changed = self._condition()
        async with changed:
            changed.notify_all()

    def summary(self) -> dict[str, Any]:
        """The decisions, for the log's early-stopping metadata (JSON)."""

        def num(x: float) -> float | None:
            return x if math.isfinite(x) else None

        pairs = max(1, len(self.models) * (len(self.models) - 1) // 2)
        fed = (
            "one observation per item"
            if not isinstance(self.family, ClusterMeans)
            else f"one observation per completed {self.cluster or 'cluster'}, the mean over its "
            "items (clusters are the independent draws; the estimand is the mean of cluster means)"
        )
        out: dict[str, Any] = {
            "method": (
                f"betting confidence sequences (Waudby-Smith and Ramdas 2024) at "
                f"{bonferroni_level(self.alpha, pairs)} (Bonferroni over pairs), anytime-valid; "
                f"{fed}; "
                + (f"{self.inner.method}; " if isinstance(self.inner, PairFamily) else "")
                + f"resolved when the CS excludes 0, or lies inside +/-{self.margin:g} (equivalent)"
            ),
            "order": list(self.order),
            "items_observed": self.fed,
            "items_per_model": self.family.model_items(),
            "pairs": [
                {
                    "a": s.a,
                    "b": s.b,
                    "resolution": s.resolution,
                    "items": s.items,
                    "estimate": num(s.estimate),
                    "low": num(s.low),
                    "high": num(s.high),
                    **({} if s.clusters is None else {"clusters": s.clusters}),
                }
                for s in self.family.states()
            ],  # fmt: skip
        }
        if isinstance(self.family, ClusterMeans):
            out["cluster"] = self.cluster
            out["clusters_observed"] = self.family.clusters
        return out


def _value(scores: dict[str, Any]) -> float:
    """A sample's first score in [0, 1]; unreadable or missing is 0 (errors count as wrong)."""
    for score in scores.values():
        raw = getattr(getattr(score, "score", score), "value", None)
        value, reason = parse_score(raw)
        return min(1.0, max(0.0, value)) if not reason else 0.0
    return 0.0


class ModelStopper:
    """inspect's EarlyStopping for one model of a live family."""

    def __init__(self, live: LiveFamily, model: str) -> None:
        """The stopper of `model` in `live`."""
        self.live = live
        self.model = model

    async def start_task(self, task: Any, samples: list[Any], epochs: int) -> str:
        """Register the task; the name of the manager."""
        return "harness until decided"

    async def schedule_sample(self, id: str | int, epoch: int) -> Any:
        """None to run the sample, or an `EarlyStop` with the reason it is not asked."""
        from inspect_ai.util import EarlyStop

        reason = await self.live.turn(self.model, str(id))
        return None if reason is None else EarlyStop(id=id, epoch=epoch, reason=reason)

    async def complete_sample(self, id: str | int, epoch: int, scores: dict[str, Any]) -> None:
        """Record the sample's score."""
        await self.live.scored(self.model, str(id), _value(scores))

    async def complete_task(self) -> dict[str, Any]:
        """The family's decisions so far."""
        await self.live.finished(self.model)
        return self.live.summary()
