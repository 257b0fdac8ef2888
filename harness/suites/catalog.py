"""The suites `harness eval --suite NAME` knows: their tasks, what they measure, and their parts.

This is the one place that names suites, and where each declares its experimental design
(`Suite.design`: unit, cluster, score type, settings), which every comparison reads.
Importing it registers each suite in `harness.registry` (kind "suite"), with the providers and
the command group its entry declares (kinds "provider" and "command"); every part is a
`module:NAME` string, imported only when used. `harness validate` asks the registry for a
suite's `validate`; a log's `section` and `own_table` (no row in the generic score table) travel
on the design `catalog_design` attaches to its record, which the report and the site read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness import registry
from harness.logs import SUITE_KEY
from harness.stats import POSITIVE, Design

if TYPE_CHECKING:
    from inspect_ai import Task
else:
    Task = Any


@dataclass(frozen=True)
class Suite:
    """A named group of inspect tasks."""

    name: str  # what --suite takes
    task_paths: tuple[str, ...]  # `module:function` of its @task functions, run together
    measures: str  # one line for `harness suites`
    default_model: str | None = None  # used when --model is not given (suites that train)
    section: str | None = None  # `module:NAME` of its `ReportSection`, if it has one
    own_table: bool = False  # its section is its table: no generic score row, no pairs
    validate: str | None = None  # `module:NAME` of `(data_dir, timeout) -> rows`, if any
    commands: str | None = None  # `module:NAME` of a click group, run as `harness <suite name>`
    # its own model providers: (prefix, `module:NAME` of the ModelAPI class), whose -M arguments
    # `harness eval` checks against the class's signature
    providers: tuple[tuple[str, str], ...] = ()
    design: Design = Design()  # unit, cluster, score type and settings (harness.stats._design)

    @property
    def task_names(self) -> tuple[str, ...]:
        """The tasks' plain names (without the `harness/` prefix)."""
        return tuple(path.partition(":")[2] for path in self.task_paths)

    @property
    def tasks(self) -> tuple[Callable[..., Task], ...]:
        """The @task functions, imported now (importing registers them with inspect)."""
        return tuple(registry.resolve(path) for path in self.task_paths)


def _builtin_suites() -> list[Suite]:
    """The suites this package defines; a suite's modules are imported only when used."""
    aime = "harness.suites.aime"
    arith = "harness.suites.arith.task"
    iwg = "harness.suites.iwg"
    k_parity = "harness.suites.k_parity.task"
    l2a = "harness.suites.l2a.task"
    lokra = "harness.suites.lokra.task"
    mas_prove = "harness.suites.mas_prove.task"
    prov = "harness.suites.provenance"
    serving = "harness.suites.serving"
    swe = "harness.suites.swe_rebench.task"
    team = "harness.suites.team.task"

    suites = [
        Suite(
            "arith",
            (f"{arith}:arith",),
            "exact-match multi-digit addition and subtraction (seeded)",
            design=Design("problem", "binary"),
        ),
        Suite(
            "aime",
            (f"{aime}:aime2024", f"{aime}:aime2025"),
            "competition-math integer answers, AIME 2024/2025",
            design=Design("problem", "binary"),
        ),
        Suite(
            "k-parity",
            (f"{k_parity}:k_parity",),
            "masked diffusion vs autoregressive training on k-sparse parity (trains its own)",
            default_model="none/none",
            section="harness.suites.k_parity.section:SECTION",
            own_table=True,
            design=Design(
                "seed", "bounded", family="the pairs of arms of one log, per metric", headline=()
            ),
        ),
        Suite(
            "lokra",
            (f"{lokra}:lokra_fit", f"{lokra}:lokra_transfer"),
            "LoRA vs LoKRA vs LoKRA+ (reconstructed): matrix fitting and tiny transfer (trains)",
            default_model="none/none",
            section="harness.suites.lokra.section:SECTION",
            own_table=True,
            # one scorer holds a relative error (fit) and an accuracy (transfer): no headline
            design=Design(
                "seed",
                "unbounded",
                family="the arms of one target against LoRA",
                headline=(),
                baseline="lora",
            ),
        ),
        Suite(
            "team",
            (f"{team}:team",),
            "TEAM vs vanilla block decoding on a tiny block-diffusion MoE (trains its own)",
            default_model="none/none",
            section="harness.suites.team.section:SECTION",
            own_table=True,
            design=Design(
                "item",
                "binary",
                cluster="seed",
                family="the variants of one log against vanilla",
                headline=(),
                baseline="vanilla",
            ),  # fmt: skip
        ),
        Suite(
            "swe-rebench",
            (f"{swe}:swe_rebench",),
            "SWE-rebench V2 repository tasks: a candidate diff and hidden tests, run in bwrap",
            validate="harness.suites.swe_rebench.validate:validate_tasks",
            design=Design("instance", "binary"),
        ),
        Suite(
            "l2a-recall",
            (f"{l2a}:l2a_recall",),
            "full-global vs SWA-only vs L2A routed global attention on key-value recall (trains)",
            default_model="none/none",
            section="harness.suites.l2a.section:SECTION",
            own_table=True,
            design=Design(
                "seed",
                "unbounded",
                bounds=POSITIVE,
                direction="lower",
                family="each variant against full global",
                headline=(),
                baseline="full",
            ),  # a cross-entropy
        ),
        Suite(
            "mas-prove",
            (f"{mas_prove}:mas_prove",),
            "process verification in multi-agent patterns: verifier x granularity x context",
            default_model="local/tiny-arith",
            section="harness.suites.mas_prove.section:SECTION",
            design=Design(
                "item",
                "binary",
                cluster="mp_problem",
                family="the verified configurations of one log against their baseline",
            ),  # fmt: skip
        ),
        Suite(
            "iwg",
            (f"{iwg}.task:iwg",),
            "orchestrators on inverse-generated workflows: step checks, entropy dynamics",
            default_model="iwg/perfect",
            section=f"{iwg}.section:SECTION",
            commands=f"{iwg}.cli:iwg",
            providers=(("iwg", f"{iwg}.scripted:ScriptedOrchestratorAPI"),),
            design=Design("instance", "bounded", family="the pairs of models, per metric"),
        ),
        Suite(
            "l2a-queries",
            (f"{l2a}:l2a_queries",),
            "key-value recall prompts for a model that reads them (default local/l2a-recall)",
            default_model="local/l2a-recall",
            design=Design("item", "binary"),
        ),
        Suite(
            "bandpo",
            ("harness.suites.bandpo.task:bandpo_bandit", "harness.suites.bandpo.task:bandpo_rlvr"),
            "GRPO clip rules (clip, clip-higher, DCPO, BandPO bands) on a bandit and toy RLVR",
            default_model="none/none",
            section="harness.suites.bandpo.section:SECTION",
            own_table=True,
            design=Design(
                "seed",
                "unbounded",
                family="each clip rule against clip, per metric",
                headline=(),
                baseline="clip",
            ),  # the mean of seven clip rules is no one's score: the section is the result
        ),
        Suite(
            "posttrainbench",
            ("harness.suites.posttrainbench.task:posttrainbench",),
            "agents post-train a tiny base model in bwrap under a budget; cheating flagged",
            default_model="none/none",
            section="harness.suites.posttrainbench.section:SECTION",
            own_table=True,
            design=Design("item", "binary", family="each run against the base model", headline=()),
        ),
        Suite(
            "serving",
            (f"{serving}.task:serving",),
            "LLM request schedulers (UniBoost, FCFS, SRPT, SJF) on Azure traces in a simulator",
            default_model="serving/uniboost",
            section=f"{serving}.section:SECTION",
            providers=(("serving", f"{serving}.provider:PolicyAPI"),),
            own_table=True,
            design=Design(
                "instance",
                "unbounded",
                cluster="slice",
                bounds=POSITIVE,
                direction="lower",
                family="each policy against noisy SJF (serving/sjf), per metric",
                headline=("ttlt_p99", "ttft_p99"),
                baseline="serving/sjf",
            ),  # unit: a trace slice; its seeds nest in it; seconds, lower is better
        ),
        Suite(
            "provenance",
            (
                f"{prov}.task:provenance_detect",
                f"{prov}.task:provenance_select",
                f"{prov}.task:provenance_distill",
            ),
            "KGW watermark power and selection (reconstructed); KGW vs ADFP fingerprints (trains)",
            default_model="none/none",
            section=f"{prov}.section:SECTION",
            own_table=True,
            commands=f"{prov}.cli:provenance",
            # one scorer holds a false-positive rate, power cells and distillation scores: the
            # section is the result, never their average
            design=Design(
                "seed", "unbounded", family="ADFP against KGW per matched KL", headline=()
            ),
        ),
        Suite(
            "imgcot",
            ("harness.suites.imgcot.task:imgcot",),
            "ImgCoT (reconstructed): image-target vs text-target CoT latents, loose steps (trains)",
            default_model="none/none",
            section="harness.suites.imgcot.section:SECTION",
            own_table=True,
            # one sample per (arm, seed), arms paired within a seed; an errored run scores the
            # worst accuracy (0) and is counted. The section's tables are the result.
            design=Design(
                "seed",
                "bounded",
                bounds=(0.0, 1.0),
                direction="higher",
                on_error="worst",
                family="the spec's four direction pairs of one log (checks 4 and 5)",
                headline=(),
            ),
        ),
        Suite(
            "protokv",
            ("harness.suites.protokv.task:protokv",),
            "ProtoKV summary-state KV memory vs token retention under delayed queries (toy world)",
            default_model="none/none",
            section="harness.suites.protokv.section:SECTION",
            own_table=True,
            # one run per seed holds every arm, so an errored seed removes all arms alike:
            # excluded and counted. The section's table is the result (accuracy per delay).
            design=Design(
                "seed",
                "bounded",
                bounds=(0.0, 1.0),
                direction="higher",
                on_error="exclude",
                family="ProtoKV against the best token baseline, over the delays",
                headline=(),
            ),
        ),
        Suite(
            "causaldpo",
            ("harness.suites.causaldpo.task:causaldpo",),
            "DPO, S-DPO, CausalDPO (reconstructed), IRMv1: a toy recommender under exposure shift",
            default_model="none/none",
            section="harness.suites.causaldpo.section:SECTION",
            own_table=True,
            # one sample per (arm, seed), arms paired within a seed (shared world, SFT model,
            # batches and negatives); an errored run is excluded and counted. NDCG and HR are
            # higher-is-better, Pop@1 and ORRatio (popularity bias) lower-is-better.
            design=Design(
                "seed",
                "bounded",
                bounds=(0.0, 1.0),
                direction="higher",
                on_error="exclude",
                family="each arm against DPO, per split and metric",
                headline=(),
                baseline="dpo",
            )
            .with_metric("pop1", direction="lower")
            .with_metric("orr10", direction="lower"),
        ),
    ]
    return suites


def register_suite(suite: Suite) -> None:
    """Register `suite`, its providers and its command group (a plugin's suites too)."""
    registry.register("suite", suite.name, suite)
    for prefix, api in suite.providers:
        registry.register("provider", prefix, api)
    if suite.commands:
        registry.register("command", suite.name, suite.commands)


for _suite in _builtin_suites():
    register_suite(_suite)


def all_suites() -> dict[str, Suite]:
    """Every registered suite by name, the built-in ones first, then the plugins'."""
    return {name: registry.get("suite", name) for name in registry.names("suite")}


def get_suite(name: str) -> Suite:
    """The suite called `name`, or a usage error naming the closest and listing the others."""
    return registry.get("suite", name)


def suite_of(name: str) -> Suite | None:
    """The registered suite called `name`, or None for a log of a suite it does not know."""
    return registry.target("suite", name)


def catalog_design(suite: str) -> Design:
    """The design the catalog declares for `suite` (the default design for a suite it lacks).

    The one place a log's suite name is looked up: callers pass it to `harness.logs.read_log`
    or `read_logs` as `designs`, which attach the result to the record, and nothing downstream
    looks a suite up again.
    """
    known = suite_of(suite)
    if known is None:
        return Design()
    return dataclasses.replace(known.design, section=known.section, own_table=known.own_table)


def suite_of_task(task_path: str) -> Suite:
    """The suite whose tasks include `task_path` (`module:function`).

    A suite's own files ask this rather than spell their suite's name: the catalog names it once.
    """
    for suite in all_suites().values():
        if task_path in suite.task_paths:
            return suite
    raise LookupError(f"no suite in the catalog lists the task {task_path!r}")


def suite_metadata(task_path: str) -> dict[str, str]:
    """The task metadata that names the suite of `task_path` in its logs."""
    return {SUITE_KEY: suite_of_task(task_path).name}
