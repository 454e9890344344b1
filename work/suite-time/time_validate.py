"""Time validating the shipped submissions from scratch, one process at a time."""
import tempfile, time
from pathlib import Path
from phasebench.leaderboard.validate import validate_all


def main():
    cache = Path(tempfile.mkdtemp()) / "cache"
    t0 = time.monotonic(); last = [t0]
    def progress(line):
        now = time.monotonic(); print(f"{now - last[0]:6.1f}s  {line}", flush=True); last[0] = now
    outcome = validate_all(Path("leaderboard/submissions"), cache=cache, on_progress=progress, jobs=1)
    print("validate", round(time.monotonic() - t0, 1), "s,", len(outcome.accepted), "accepted")


if __name__ == '__main__':
    main()
