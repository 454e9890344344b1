"""Profile one demo model's lm-eval run at the defaults (where the demo's time goes)."""
import cProfile, pstats, sys, time
from pathlib import Path
from phasebench.demo import generate_split, evaluate_models
from phasebench.reference import DEMO_N_BASE, EVAL_LENGTH
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
t = time.monotonic()
splits = generate_split(out / "splits", EVAL_LENGTH, DEMO_N_BASE, seed=0)
print("split", round(time.monotonic() - t, 1), flush=True)
import torch; torch.set_num_threads(1)
pr = cProfile.Profile(); pr.enable(); t = time.monotonic()
evaluate_models(splits, out / "lm_eval", EVAL_LENGTH, variants=(sys.argv[2],))
pr.disable(); print("eval", round(time.monotonic() - t, 1), flush=True)
pstats.Stats(pr).sort_stats("cumulative").print_stats(45)
