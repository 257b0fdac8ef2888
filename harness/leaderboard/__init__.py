"""The leaderboard: a static site built from eval logs, with inspect's viewer bundled in."""
