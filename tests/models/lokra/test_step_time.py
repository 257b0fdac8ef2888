from harness.models.lokra.step_time import StepTime, measure_step_times


def test_measure_step_times_smoke():
    times = measure_step_times(steps=2, warmup=1, hidden_size=16, intermediate_size=32, seq_len=8)
    assert [t.method for t in times] == ["lora", "lokra", "lokra_plus"]
    assert all(isinstance(t, StepTime) and t.seconds_per_step > 0 for t in times)
    assert times[0].ratio_vs_lora == 1.0
    assert times[1].ratio_vs_lora == times[1].seconds_per_step / times[0].seconds_per_step
    # hidden 16: LoRA r = 8 on 16→16 (q, k, v), 16→32 (up), 32→16 (down), 2 layers
    assert times[0].trainable_params == times[1].trainable_params == 2 * 8 * (3 * 32 + 48 + 48)
    # LoKRA+: I = J = ⌈√d_out⌉ = 4 (d_out 16) or 6 (d_out 32)
    assert times[2].trainable_params == 2 * (3 * 8 * 16 + 12 * 16 + 8 * 32)
    assert "vs LoRA" in times[2].summary()
