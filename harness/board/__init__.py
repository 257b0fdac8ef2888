"""Boards: every model's score on every item, and sequential evaluation replayed on them."""
