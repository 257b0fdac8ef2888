"""The comparison engine over logs: score rows per arm, comparable groups, pairs with Holm.

It reads logs through `harness.logs` and the design attached to each, and calls
`harness.stats.compare`; `harness eval`'s summary, `harness report`, the leaderboard, the board
and the suites' sections all take their numbers from here. It imports only the bottom floor
(`harness.logs`, `harness.stats`), so every floor above may use it.
"""
