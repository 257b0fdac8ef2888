"""harness: an evaluation harness for language models, built on inspect-ai."""

__version__ = "0.1.0"
