"""Suite `serving`: tail-aware request scheduling (UniBoost) in a discrete-event LLM server.

See docs/suites/serving.md and the spec (specs/uniboost.md). The policy under test is the eval's
model (`serving/fcfs`, `serving/uniboost`, ...); a trace slice with a seed is a sample.
"""
