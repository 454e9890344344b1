"""Profile validating the shipped submissions from scratch (the shipped-site test's first step)."""
import cProfile, pstats, sys, tempfile, time
from pathlib import Path
from phasebench.leaderboard.validate import validate_all
cache = Path(tempfile.mkdtemp()) / "cache"
pr = cProfile.Profile(); pr.enable(); t = time.monotonic()
outcome = validate_all(Path("leaderboard/submissions"), cache=cache, **({"workers": 1} if "w1" in sys.argv else {}))
pr.disable(); print("validate", round(time.monotonic() - t, 1), len(outcome.accepted), flush=True)
pstats.Stats(pr).sort_stats("tottime").print_stats(25)
pstats.Stats(pr).sort_stats("cumulative").print_stats(40)
