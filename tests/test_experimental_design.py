"""Issue 30's defects, each reproduced: identity, judge correction with errors, units, clipped
intervals, uneven epochs, redaction, and the agreement of a test with its interval."""

import math

import numpy as np
import pytest

from harness.compare._scores import judge_scores, score_rows
from harness.logs import (
    LogIdentity,
    LogRecord,
    SampleScore,
    identity_of,
    is_secret_name,
    redact,
)
from harness.report._budgets import budget_row
from harness.stats._compare import estimate
from harness.stats._design import Design, rejects
from harness.stats._exact import sign_flip_interval
from harness.stats._paired import paired_permutation
from harness.suites.catalog import catalog_design

# --- helpers ---------------------------------------------------------------------------------


def _spec(**over) -> dict:
    spec = {
        "task": "harness/arith",
        "task_args": {"n": 5, "workers": 2},
        "dataset": {"sample_ids": ["a", "b"]},
        "model": "scripted/a",
        "model_args": {"echo": True},
        "model_generate_config": {},
        "config": {"epochs": 1, "max_samples": 32},
        "metadata": {"harness_suite": "arith"},
    }
    for key, value in over.items():
        spec[key] = value
    return spec


SUMMARIES = [
    {"id": "a", "input": "1+1=", "target": "2"},
    {"id": "b", "input": "2+2=", "target": "4"},
]


def _record(samples, suite="toy", task="t", model="m/x") -> LogRecord:
    ids = sorted({s.id for s in samples})
    identity = LogIdentity(suite, task, (), "h", len(ids), model, ())
    return LogRecord(f"{model}.eval", identity, "2026-01-01", {}, tuple(samples),
                     design=catalog_design(suite))  # fmt: skip


def _sample(sid, epoch, value, error="", metadata=None, usage=None, scorer="match"):
    return SampleScore(sid, epoch, ((scorer, value),), error, metadata or {}, usage or {})


# --- 1. identity -----------------------------------------------------------------------------


def test_epochs_generate_config_and_solver_separate_runs_but_the_seed_makes_replicates():
    base = identity_of(_spec(), ["a", "b"], SUMMARIES)
    epochs = identity_of(_spec(config={"epochs": 3}), ["a", "b"], SUMMARIES)
    temp = identity_of(_spec(model_generate_config={"temperature": 0.7}), ["a", "b"], SUMMARIES)
    seed = identity_of(_spec(model_generate_config={"seed": 7}), ["a", "b"], SUMMARIES)
    solver = identity_of(_spec(solver="cot", solver_args={"k": 2}), ["a", "b"], SUMMARIES)
    settings = identity_of(
        _spec(task_args={"n": 5, "workers": 8}, config={"epochs": 1, "max_samples": 4}),
        ["a", "b"],
        SUMMARIES,
    )
    for other in (epochs, temp, solver):
        assert other.comparable != base.comparable
    assert dict(epochs.fields())["config.epochs"] == "3"
    assert seed.comparable == base.comparable and seed.configuration == base.configuration
    assert seed.full != base.full and seed.replicate == "7"
    assert settings == base  # workers and max_samples only say how it ran


def test_the_data_hash_reads_content_not_only_ids_and_ignores_message_ids():
    same_ids = [{"id": "a", "input": "9+9=", "target": "18"}, SUMMARIES[1]]
    a = identity_of(_spec(), ["a", "b"], SUMMARIES)
    b = identity_of(_spec(), ["a", "b"], same_ids)
    assert a.sample_hash != b.sample_hash and a.comparable != b.comparable
    chat = [{"id": "a", "input": [{"id": "x1", "role": "user", "content": "hi"}], "target": "t"}]
    again = [{"id": "a", "input": [{"id": "y9", "role": "user", "content": "hi"}], "target": "t"}]
    assert (
        identity_of(_spec(), ["a"], chat).sample_hash
        == identity_of(_spec(), ["a"], again).sample_hash
    )


def test_one_epoch_and_three_epochs_with_a_seed_are_neither_superseded_nor_paired(tmp_path):
    """The issue's reproduction, end to end: both runs are reported; replicates pool."""
    from harness.eval import EvalRequest, run
    from harness.kv_args import parse_kv
    from harness.report._data import build_report

    logs = str(tmp_path / "logs")

    def run_one(model: str, epochs: int, seed: int | None) -> None:
        request = EvalRequest(
            suite="arith", models=(model,), limit=5, epochs=epochs, seed=seed, log_dir=logs,
            model_args=parse_kv(("echo=true",), "-M"), display="none",
        )  # fmt: skip
        assert run(request).ok

    run_one("scripted/a", 1, None)
    run_one("scripted/a", 3, 7)
    run_one("scripted/a", 3, 8)  # a replicate of the previous configuration
    run_one("scripted/b", 3, 7)
    report = build_report([logs], catalog_design)
    assert not [b for b in report.left_out if "superseded" in b.reason]
    assert len(report.logs) == 4
    pooled = [r for r in report.scores if "2 replicates pooled" in r.model]
    assert pooled and pooled[0].n == 5
    # scripted/a at 3 epochs (pooled) against scripted/b at 3 epochs; nothing at 1 epoch
    assert [(p.model_a, p.model_b) for p in report.pairs] == [
        ("scripted/a (echo=true)", "scripted/b (echo=true)")
    ]
    assert any("config.epochs 1 vs 3" in n.reason for n in report.not_comparable)


# inspect 0.3.285's EvalSpec and EvalConfig fields: a field a later inspect adds fails here, and
# is part of the identity until harness.logs lists it as a setting
EVAL_SPEC_FIELDS = {
    "eval_set_id", "eval_id", "run_id", "created", "task", "task_id", "task_version",
    "task_file", "task_display_name", "task_description", "task_registry_name", "task_attribs",
    "task_args", "task_args_passed", "solver", "solver_args", "solver_args_passed", "tags",
    "dataset", "sandbox", "model", "model_generate_config", "model_base_url", "model_args",
    "model_roles", "config", "revision", "packages", "metadata", "viewer", "scorers", "metrics",
    "headline_metric", "shards",
}  # fmt: skip
EVAL_CONFIG_FIELDS = {
    "limit", "sample_id", "sample_shuffle", "epochs", "epochs_reducer", "approval", "review",
    "sentinel", "notification", "fail_on_error", "continue_on_fail", "retry_on_error",
    "score_on_error", "message_limit", "token_limit", "token_limit_type", "turn_limit",
    "time_limit", "working_limit", "cost_limit", "max_samples", "max_dataset_memory",
    "max_tasks", "max_subprocesses", "max_sandboxes", "sandbox_cleanup", "sandbox_prebuilt",
    "log_samples", "log_realtime", "log_images", "log_model_api", "log_buffer", "log_shared",
    "score_display", "acp_server",
}  # fmt: skip


def test_the_identity_is_the_whole_eval_spec_less_its_listed_settings():
    from inspect_ai.log import EvalConfig, EvalSpec

    from harness.logs import CONFIG_SETTINGS, SPEC_READ, SPEC_SETTINGS

    assert set(EvalSpec.model_fields) == EVAL_SPEC_FIELDS
    assert set(EvalConfig.model_fields) == EVAL_CONFIG_FIELDS
    assert SPEC_SETTINGS <= EVAL_SPEC_FIELDS and SPEC_READ <= EVAL_SPEC_FIELDS
    assert CONFIG_SETTINGS <= EVAL_CONFIG_FIELDS
    base = identity_of(_spec(), ["a", "b"], SUMMARIES)
    for name in sorted(EVAL_SPEC_FIELDS - SPEC_SETTINGS - {"config", "dataset", "metadata"}):
        value = [{"name": "changed"}] if name == "scorers" else {"x": "changed"}
        other = identity_of(_spec(**{name: value}), ["a", "b"], SUMMARIES)
        assert other.full != base.full, name  # a new value in any field tells the runs apart
    for name in sorted(EVAL_CONFIG_FIELDS - CONFIG_SETTINGS):
        other = identity_of(_spec(config={"epochs": 1, name: 7}), ["a", "b"], SUMMARIES)
        assert other.comparable != base.comparable, name
    for name in sorted(SPEC_SETTINGS - {"metadata"}):
        assert identity_of(_spec(**{name: "x"}), ["a", "b"], SUMMARIES) == base, name


def _kept_apart(a: dict, b: dict, summaries=SUMMARIES) -> None:
    """Two logs of these specs: both used (neither superseded), and not one configuration."""
    from harness.logs import select_logs

    ia, ib = identity_of(a, ["a", "b"], summaries), identity_of(b, ["a", "b"], summaries)
    assert ia.configuration != ib.configuration
    records = [LogRecord(f"{i}.eval", ident, f"2026-01-0{i}", {}, (_sample("a", 1, 1),))
               for i, ident in enumerate((ia, ib), start=1)]  # fmt: skip
    selection = select_logs(records)
    assert len(selection.used) == 2 and not selection.left_out


def test_a_model_role_base_url_limit_or_sandbox_keeps_two_logs_apart():
    role = {"grader": {"model": "openai/gpt-4o-mini", "args": {"api_key": "sk-abcdefghijklmn"}}}
    other_role = {"grader": {"model": "openai/gpt-4o", "args": {}}}
    _kept_apart(_spec(model_roles=role), _spec(model_roles=other_role))
    assert "sk-abc" not in str(identity_of(_spec(model_roles=role), ["a"], SUMMARIES))
    _kept_apart(_spec(model_base_url="http://a:8000/v1"), _spec(model_base_url="http://b/v1"))
    arm = identity_of(_spec(model_base_url="http://a:8000/v1"), ["a"], SUMMARIES).arm_label
    assert "http://a:8000/v1" in arm  # two endpoints are two arms, each named
    _kept_apart(_spec(config={"epochs": 1, "turn_limit": 5}), _spec())
    _kept_apart(_spec(config={"epochs": 1, "token_limit": 500}), _spec())
    _kept_apart(_spec(sandbox={"type": "docker", "config": None}),
                _spec(sandbox={"type": "bwrap", "config": None}))  # fmt: skip


def test_one_input_differing_past_character_6000_keeps_two_logs_apart():
    """The summaries keep 5,120 characters of an input; the full-content hash all of them."""
    from inspect_ai.dataset import Sample

    from harness.eval._data_content import data_manifest

    long_a, long_b = "x" * 6000 + "a", "x" * 6000 + "b"
    thinned = [{"id": "a", "input": long_a[:5120], "target": "1"}, SUMMARIES[1]]
    assert identity_of(_spec(), ["a", "b"], thinned) == identity_of(_spec(), ["a", "b"], thinned)
    specs = []
    for text in (long_a, long_b):
        samples = [Sample(id="a", input=text, target="1"), Sample(id="b", input="2+2=", target="4")]
        digest = data_manifest(samples)["sha256"][:12]
        meta = {"harness_suite": "arith", "harness_data_hash": {"arith": digest}}
        specs.append(_spec(metadata=meta))
    _kept_apart(*specs, summaries=thinned)


# --- 2. the judge correction with errors -------------------------------------------------------


def _judged_units(rng, theta=0.6, q0=0.7, q1=0.9, e=0.1, n=500, m=200, epochs=1) -> dict:
    """Test units (truth theta, errored with probability e) and labelled calibration units."""
    units = {}
    truth = rng.random(n) < theta
    for i in range(n):
        units[f"t{i}"] = [
            (None, True)
            if rng.random() < e
            else ({"judge": int(rng.random() < (q1 if truth[i] else 1 - q0)), "human": -1}, False)
            for _ in range(epochs)
        ]
    human = rng.random(m) < theta
    for i in range(m):
        units[f"c{i}"] = [
            (
                {"judge": int(rng.random() < (q1 if human[i] else 1 - q0)), "human": int(human[i])},
                False,
            )  # fmt: skip
            for _ in range(epochs)
        ]
    return units


def test_the_corrected_score_with_errors_is_not_biased():
    """Truth 0.60, q0 0.7, q1 0.9, 10% errors: the target is 0.54 (0.539 in the issue); the
    old rule printed 0.485 [0.463, 0.506]."""
    scores = judge_scores(_judged_units(np.random.default_rng(0), n=20_000, m=4_000))
    assert scores.corrected.estimate == pytest.approx(0.54, abs=0.012)
    assert scores.corrected.low <= 0.54 <= scores.corrected.high
    assert "answered share" in scores.corrected.method


@pytest.mark.slow
@pytest.mark.parametrize(("errors", "epochs", "n", "m"),
                         [(0.0, 1, 500, 200), (0.1, 1, 500, 200), (0.3, 1, 500, 200),
                          (0.1, 4, 100, 60)])  # fmt: skip
def test_corrected_judge_interval_covers_at_the_n_printed(errors, epochs, n, m):
    rng = np.random.default_rng(5)
    truth = 0.6 * (1 - errors)
    reps = 2000
    hits = 0
    for _ in range(reps):
        ci = judge_scores(_judged_units(rng, e=errors, n=n, m=m, epochs=epochs)).corrected
        assert ci.n == n  # the n printed counts test units, not unit x epoch
        hits += ci.low <= truth <= ci.high
    assert 0.94 <= hits / reps <= 0.965  # Monte-Carlo SE about 0.005


# --- 3. units ----------------------------------------------------------------------------------


def test_judge_rows_count_problems_not_sample_epochs():
    samples = []
    for p in range(3):  # 3 test problems x 4 epochs
        samples += [_sample(f"t{p}", e, {"judge": e % 2, "human": -1}) for e in range(1, 5)]
    for p, human in enumerate((0, 0, 1, 1)):  # 4 calibration problems x 4 epochs
        samples += [_sample(f"c{p}", e, {"judge": human, "human": human}) for e in range(1, 5)]
    rows = {r.metric: r for r in score_rows(_record(samples))}
    assert rows["judge (naive)"].n == 3 and rows["judge (corrected)"].n == 3
    units = {}
    for s in samples:
        units.setdefault(s.id, []).append((dict(s.raw)["match"], False))
    assert judge_scores(units).n_calibration == 4


def test_budgets_are_per_problem():
    samples = [
        _sample(f"s{p}", e, "C", usage={"m": {"input_tokens": 10 * p, "output_tokens": e}})
        for p in range(3)
        for e in (1, 2, 3, 4)
    ]
    row = budget_row(_record(samples))
    assert row.n_budget == 3 and row.budgets["total_io"].n == 3
    assert row.budgets["total_out"].estimate == pytest.approx(2.5)


def test_mas_prove_generic_rows_are_clustered_by_chain():
    rng = np.random.default_rng(3)
    samples = []
    for chain, p in enumerate(rng.beta(2, 3, size=8)):
        samples += [
            _sample(f"c{chain}-{i}", 1, "C" if rng.random() < p else "I",
                    metadata={"mp_problem": f"chain{chain}"})
            for i in range(130)
        ]  # fmt: skip
    [row] = score_rows(_record(samples, suite="mas-prove", task="mas_prove"))
    assert row.n == 1040 and "clustered" in row.ci_method
    flat = estimate(Design(), [1.0 if dict(s.raw)["match"] == "C" else 0.0 for s in samples])
    assert row.ci_high - row.ci_low > 2 * (flat.high - flat.low)


@pytest.mark.slow
@pytest.mark.parametrize(("mean", "sd"), [(0.43, 0.2), (0.2, 0.1)])
def test_chain_clustered_interval_covers_at_8_chains(mean, sd):
    design = Design("item", "binary", cluster="mp_problem")
    rng = np.random.default_rng(9)
    scale = mean * (1 - mean) / sd**2 - 1
    labels = list(np.repeat(np.arange(8), 130))
    reps, hits = 2000, 0
    for _ in range(reps):
        p = rng.beta(mean * scale, (1 - mean) * scale, size=8)
        y = (rng.random((8, 130)) < p[:, None]).astype(float).ravel()
        ci = estimate(design, list(y), labels)
        hits += ci.low <= mean <= ci.high
    assert 0.94 <= hits / reps <= 0.965


# --- 4 and 5. clipped intervals, uneven epochs --------------------------------------------------


def test_t_intervals_on_proportions_stay_in_0_1_and_say_so():
    # pass@3 over three problems: 1, 0, 0; a plain t interval is about [-1.1, 1.8]
    values = {"s0": "CCC", "s1": "III", "s2": "III"}
    samples = [_sample(s, e + 1, v[e]) for s, v in values.items() for e in range(3)]
    rows = {r.metric: r for r in score_rows(_record(samples))}
    for metric in ("accuracy", "pass@3"):
        assert rows[metric].ci_method == "wilson"  # units are 0/1 here
    values = {"s0": "CCI", "s1": "III", "s2": "CII"}
    samples = [_sample(s, e + 1, v[e]) for s, v in values.items() for e in range(3)]
    row = {r.metric: r for r in score_rows(_record(samples))}["accuracy"]
    assert 0.0 <= row.ci_low <= row.ci_high <= 1.0 and "clipped to [0, 1]" in row.ci_method


def test_pass_at_k_takes_the_fewest_epochs_when_they_are_uneven():
    samples = [_sample("s0", e, "C" if e == 1 else "I") for e in (1, 2, 3)]
    samples += [_sample("s1", e, "I") for e in (1, 2)]
    rows = {r.metric: r for r in score_rows(_record(samples))}
    assert "pass@2" in rows and "fewest epochs" in rows["pass@2"].ci_method
    assert rows["pass@2"].value == pytest.approx((1 - 1 / 3) / 2)  # s0: 1 - C(2,2)/C(3,2)


# --- 7. redaction ------------------------------------------------------------------------------


def test_redaction_is_an_explicit_list_not_a_substring():
    for name in ("max_tokens", "judge_max_tokens", "author", "tokenizer", "keyword", "monkey"):
        assert not is_secret_name(name), name
        assert redact(name, 512) == "512"
    for name in ("api_key", "OPENAI_API_KEY", "auth_token", "token", "password", "secret", "key"):
        assert is_secret_name(name), name
        assert redact(name, "hunter2").startswith("<redacted #")
    assert redact("base", "sk-abcdefghijklmnop").startswith("<redacted #")


# --- 8. one decision rule; a test and its interval agree ----------------------------------------


def test_sign_flip_p_and_interval_agree_with_zero_and_tied_differences():
    rng = np.random.default_rng(0)
    disagreements = 0
    for i in range(600):
        n = int(rng.integers(6, 19))
        d = rng.choice([-1.0, 0.0, 0.0, 1.0, 1.0, 2.0], size=n)
        if i % 2:
            d = np.round(rng.normal(0.5, 1, size=n), 1)
            d[rng.random(n) < 0.3] = 0.0
        p = paired_permutation(d, np.zeros(n)).p_value
        ci = sign_flip_interval(d)
        if ci.estimable:
            disagreements += rejects(p, 0.05) != (not ci.low <= 0.0 <= ci.high)
    assert disagreements == 0


def test_the_ranking_rejects_at_p_equal_to_alpha(monkeypatch):
    from harness.compare._pairs import Group, PairResult
    from harness.leaderboard import ranking

    a = _record([_sample(f"s{i}", 1, "C") for i in range(10)], model="m/a")
    b = _record([_sample(f"s{i}", 1, "I") for i in range(10)], model="m/b")
    pair = PairResult("toy", "t", "m/a", "m/b", None, 0.05)
    monkeypatch.setattr(ranking, "group_pairs", lambda group: [pair])
    table = ranking.task_table(Group("toy", "t", "t", (a, b)), alpha=0.05)
    assert [r.rank for r in table.rows] == [1, 2]
    assert rejects(0.05, 0.05) and not rejects(math.nan, 0.05)


# --- the engine online; results a program can read ----------------------------------------------


def test_the_tally_gives_what_compare_gives_on_the_same_units():
    from harness.stats._compare import Tally, compare

    rng = np.random.default_rng(2)
    design = Design("problem", "binary")
    tally = Tally(design, metric="accuracy")
    scores: dict[str, dict[str, list[float]]] = {}
    for arm, p in (("a", 0.8), ("b", 0.5), ("c", 0.45)):
        for unit in range(40):
            for _ in range(2):  # two epochs: a unit's score is their mean
                value = float(rng.random() < p)
                tally.add(arm, f"u{unit}", value)
                scores.setdefault(arm, {}).setdefault(f"u{unit}", []).append(value)
    means = {a: {u: sum(v) / len(v) for u, v in us.items()} for a, us in scores.items()}
    assert tally.result() == compare(design, means, metric="accuracy")
    assert tally.result().pair("b", "a") == compare(design, means).pair("a", "b").flipped()
    with pytest.raises(ValueError, match="finite"):
        tally.add("a", "u0", math.nan)


def test_eval_json_and_report_json_carry_the_suites_sections(tmp_path):
    """A suite with its own section prints its tables in `harness eval --json`, and
    `harness report --format json` writes every section's results as strict JSON."""
    import json

    from click.testing import CliRunner

    from harness.cli import main

    logs = tmp_path / "logs"
    args = ["eval", "--suite", "mas-prove", "--model", "scripted/agent", "--log-dir", str(logs),
            "--display", "none", "--json", "-T", "problems=2", "-T", "seeds=1",
            "-T", "patterns=single", "-T", "verifiers=none,oracle"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout[result.stdout.index("{") :])
    [section] = printed["sections"]
    assert section["results"] and section["results"][0]["rows"]
    assert printed["scores"][0]["unit"] == "item"
    out = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["report", str(logs), "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"bare {c}"))
    # the generic cost section (every log's cost rows and frontier), then the suite's own
    from harness.report._budgets import BUDGETS

    assert [s["title"] for s in written["sections"]] == [BUDGETS.title, section["title"]]
    assert written["scores"] == printed["scores"]


def test_integrity_flags_are_counted_beside_the_score_everywhere(tmp_path):
    """A flagged sample (SWE tampering) shows as a count next to the score: rows, report, site."""
    import json
    from pathlib import Path

    from harness.leaderboard.build import build_site
    from harness.logs import read_log
    from tests.leaderboard.logs import template_log, write_variant

    template = template_log(tmp_path / "t", 6)
    logs = tmp_path / "logs"
    path = write_variant(template, logs / "f.eval", task="arith_easy", model="scripted/f",
                         accuracy=0.5, seed=4)  # fmt: skip
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(path))
    for sample in (log.samples or [])[:2]:
        for score in sample.scores.values():
            score.metadata = {**(score.metadata or {}), "integrity_flags": ["touched tests"]}
    write_eval_log(log, str(path))
    record = read_log(str(path))
    assert [r.flagged for r in score_rows(record)] == [2]
    site = build_site([str(logs)], catalog_design, str(tmp_path / "site"), viewer=False)
    board = json.loads((Path(site.site) / "leaderboard.json").read_text())
    assert board["tasks"][0]["rows"][0]["flagged"] == 2
    assert "2 flagged" in (Path(site.site) / "index.html").read_text()
