"""Inference methods that wrap an inner model: PDR, Sequential Refinement and SuCo's early exit.

Each is an inspect-ai `ModelAPI` registered as a provider (`pdr/INNER`, `sr/INNER`, `suco/INNER`)
that makes its calls through the inner model's `Model.generate`, so every inner call is a model
event in the sample's transcript and any model the harness can call can be wrapped.
"""
