"""Inference methods that wrap an inner model: PDR and Sequential Refinement.

Each is an inspect-ai `ModelAPI` registered as a provider (`pdr/INNER`, `sr/INNER`) that makes
its calls through the inner model's `Model.generate`, so every inner call is a model event in the
sample's transcript and any model the harness can call can be wrapped. SuCo's early exit
(`suco/INNER`) is built the same way in `harness.suco.early_exit`.
"""
