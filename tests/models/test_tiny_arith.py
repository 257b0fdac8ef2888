"""tiny-arith: the tokenizer round-trips, and the trained model scores far above chance."""

from harness.eval import EvalRequest, run
from harness.models.tiny_arith import EOS, build_tokenizer


def test_tokenizer_round_trips_and_maps_unknown_characters():
    tok = build_tokenizer()
    ids = tok.encode("12+34=-46")
    assert len(ids) == 9 and tok.decode(ids) == "12+34=-46"
    assert tok.encode("x") == [tok.unk_token_id]
    assert tok.eos_token == EOS
    assert tok.apply_chat_template([{"role": "user", "content": "1+2="}], tokenize=False) == "1+2="


def test_tiny_arith_scores_far_above_chance(tmp_path):
    # The first use trains tiny-arith (about 90 s on 2 cores) and caches it under the user's
    # cache folder, which `make demo` shares. A uniform guess over the possible answers
    # (-89..198) is right under 1% of the time, so 0.5 is far above chance.
    ok, rows, _ = run(
        EvalRequest(
            suite="arith",
            models=("local/tiny-arith",),
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    )
    (row,) = rows
    assert ok and row.n == 200 and row.errors == 0
    assert row.value >= 0.5, row
    assert row.ci_low > 0.4
