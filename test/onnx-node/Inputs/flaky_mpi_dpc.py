"""A stand-in for dpc whose rank executable fails to start once, the way
Open MPI's own start-up fails (a framed message), and then predicts ReLU:
it checks that run_node_tests.py starts such a rank again and says so."""
import os
import stat
import sys

RANK = r'''#!/usr/bin/env python3
import os, sys
import numpy as np
marker = "started-once"
if not os.path.exists(marker):
    open(marker, "w").close()
    print("-" * 74)
    print("It looks like orte_init failed for some reason.")
    print("-" * 74)
    sys.exit(1)
args = sys.argv[1:]
x = np.load(args[args.index("--data") + 1].split(":", 1)[1])
np.save(args[args.index("--predictions") + 1], np.maximum(x, 0))
'''

args = sys.argv[1:]
if args[:1] != ["compile"]:
    sys.exit(f"flaky_mpi_dpc: only 'compile', got {args}")
out = args[args.index("-o") + 1]
os.makedirs(out, exist_ok=True)
rank = os.path.join(out, "rank0")
with open(rank, "w") as f:
    f.write(RANK.replace("/usr/bin/env python3", sys.executable))
os.chmod(rank, os.stat(rank).st_mode | stat.S_IXUSR)
