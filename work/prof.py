import cProfile, pstats, sys, tempfile
sys.argv = ["x", "300"]
sys.path.insert(0, "work")
import importlib.util
spec = importlib.util.spec_from_file_location("rs", "work/render_scale.py")
src = open("work/render_scale.py").read().split("n = int")[0]
ns = {}; exec(src, ns)
from pathlib import Path
from phasebench.leaderboard.render import render_site
board = ns["synth"](300)
out = Path(tempfile.mkdtemp())
cProfile.run("render_site(board, out)", "/tmp/prof.out")
pstats.Stats("/tmp/prof.out").sort_stats("cumulative").print_stats(25)
