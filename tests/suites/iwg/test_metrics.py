"""The spec's §3 metric vectors, exactly (worked by hand in specs/iwg.md), and the matchers."""

import math

import pytest

from harness.suites.iwg import metrics
from harness.suites.iwg.schema import Checkpoint


def test_lcs_f1_vectors():
    gold = ["A", "B", "C", "D"]
    assert metrics.lcs_length(["A", "C", "B", "D"], gold) == 3
    assert metrics.lcs_f1(["A", "C", "B", "D"], gold) == pytest.approx(0.75, abs=1e-12)
    # P = 1, R = 0.5: F1 = 2/3
    assert metrics.lcs_f1(["A", "B"], gold) == pytest.approx(2 / 3, abs=1e-12)
    assert round(metrics.lcs_f1(["A", "B"], gold), 4) == 0.6667
    assert metrics.lcs_f1([], gold) == 0.0
    assert metrics.lcs_f1(["X"], gold) == 0.0


@pytest.mark.parametrize(("m", "expected"), [(1, 0.0), (2, 0.6931), (7, 1.9459)])
def test_entropy_of_m_distinct_agents_is_ln_m(m, expected):
    agents = ["searcher", "browser", "reader", "calculator", "coder", "analyst", "writer"][:m]
    h = metrics.scheduling_entropy(agents)
    assert h == pytest.approx(math.log(m), abs=1e-12)
    assert round(h, 4) == expected


def test_compat_quirk_overwrites_instead_of_summing():
    agents = ["searcher", "searcher", "browser"]
    # compat: p = (1/3, 1/3) -> 0.7324; ours: (2/3, 1/3) -> 0.6365
    assert round(metrics.scheduling_entropy(agents, compat=True), 4) == 0.7324
    assert round(metrics.scheduling_entropy(agents), 4) == 0.6365
    # unknown names: dropped without renormalising under compat, renormalised in ours
    assert metrics.scheduling_entropy(["searcher", "nobody"]) == 0.0
    assert metrics.scheduling_entropy(["searcher", "nobody"], compat=True) == pytest.approx(
        -0.5 * math.log(0.5)
    )


def test_faithfulness_vector():
    gold = [Checkpoint("exact_match", "Michael Haneke, born 1942"), Checkpoint("exact_match", "x")]
    queries = ["first", "When was Michael Haneke born?"]
    assert metrics.tokens(gold[0].expected_value) == {"michael", "haneke", "born", "1942"}
    assert metrics.faithfulness(queries, gold) == 0.75
    assert metrics.faithfulness(["only one step"], gold) == 0.0  # nothing quoted: ours
    assert metrics.faithfulness(["only one step"], gold[:1]) == 1.0  # nothing to quote
    assert metrics.faithfulness(["a", "b"], [Checkpoint("exact_match", "--"), gold[1]]) == 1.0


def test_eh_classes_in_order():
    assert metrics.recovery_class("Retry the search with a different query") == "Retry"
    assert metrics.recovery_class("Use a fallback agent") == "Switch Agent"
    assert metrics.recovery_class("Terminate the run") == "Abort"
    assert metrics.recovery_class("Break down the request") == "Decompose"
    assert metrics.recovery_class("carry on") == "Other"
    assert metrics.eh_f1(["try again later"], ["Retry it"]) == 1.0
    assert metrics.eh_f1([], ["Retry it"]) == 0.0
    assert metrics.eh_f1([], []) == 1.0


def test_checkpoint_matchers_and_positional_success():
    exact = Checkpoint("exact_match", " Amber-1234 ")
    assert metrics.checkpoint_match("amber-1234", exact)
    assert not metrics.checkpoint_match("amber-1234 (done)", exact)
    api = Checkpoint("api_verify", "API( 1942 )")
    assert metrics.checkpoint_match("He was born in 1942.", api)
    assert not metrics.checkpoint_match("API( 1942 )x", Checkpoint("api_verify", "API(1943)"))
    custom = Checkpoint("custom_1shot", "Haneke")
    assert metrics.checkpoint_match("michael haneke directed it", custom)
    gold = [Checkpoint("exact_match", v) for v in ("a", "b", "c", "d")]
    # dropping step j = 1 of 4 shifts every later value: Step-SR = j / n = 0.25, TS = 0
    assert metrics.step_sr(["a", "c", "d"], gold) == 0.25
    assert metrics.task_success(["a", "c", "d"], gold) == 0.0
    assert metrics.task_success(["a", "b", "c", "d"], gold) == 1.0
    assert metrics.task_success(["a", "b", "c", "d", "d"], gold) == 0.0
    assert metrics.step_sr([], []) == 1.0


def test_jaccard_fallback():
    assert metrics.jaccard("a b c", "b c d") == 0.5
    assert metrics.jaccard("", "") == 1.0
