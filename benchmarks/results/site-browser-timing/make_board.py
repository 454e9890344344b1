"""Validate the shipped submissions once and keep the scored board for render iterations."""

import json
from pathlib import Path

from phasebench.leaderboard.score import load_reported, score
from phasebench.leaderboard.validate import validate_all


def main():
    out = validate_all(Path("leaderboard/submissions"), cache=Path("work/cache"))
    board = score(out, load_reported())
    Path("work/board.json").write_text(json.dumps(board))
    print(len(board["rows"]), "rows", len(out.refused), "refused")


if __name__ == "__main__":
    main()
