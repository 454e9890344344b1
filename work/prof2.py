import cProfile, pstats, tempfile
from pathlib import Path
src = open("work/render_scale.py").read().split("n = int")[0]
ns = {}; exec(src, ns)
from phasebench.leaderboard.score import write_tables
board = ns["synth"](1000)
out = Path(tempfile.mkdtemp())
cProfile.run("write_tables(board, out)", "/tmp/prof2.out")
pstats.Stats("/tmp/prof2.out").sort_stats("cumulative").print_stats(18)
