"""What `harness eval` adds around inspect's `eval_set`: model prices and the run's manifest."""
