"""The leaderboard: collect, validate, score, render."""
