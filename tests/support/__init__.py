"""Helpers shared by the tests: one tiny-model builder, one lm-eval runner, test tokenizers,
synthetic and real leaderboard submissions, and a local Hub stand-in."""
