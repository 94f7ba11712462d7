#!/usr/bin/env bash
# Instructions the sim spends on N whole scripted matches (seeds 1..N): valgrind's count of a run that plays
# them, less a run that only imports and builds the world. Unlike `mau bench env`'s CPU seconds, the count does
# not change with the machine's load, so it compares two commits on a shared machine (docs/collect.md, "The
# sim's own speed"). Usage: tools/sim_instructions.sh [N=5] [PYTHON=.venv/bin/python]; needs valgrind.
set -euo pipefail
n=${1:-5}
py=${2:-.venv/bin/python}
command -v valgrind >/dev/null || { echo "tools/sim_instructions.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
play='
import sys
from mau.env.runner import play_match
from mau.env.scripted import ScriptedPolicy
from mau.env.sim import SimWorld
world = SimWorld()
for seed in range(1, 1 + int(sys.argv[1])):
    play_match(world, {p.name: ScriptedPolicy(p.name, world.map, seed) for p in world.cfg.players}, seed)
'
count() {  # steady counts: one BLAS thread, a fixed hash seed
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONHASHSEED=0 valgrind --tool=cachegrind --cache-sim=no \
        --cachegrind-out-file=/dev/null "$py" -c "$play" "$1" 2>&1 | awk '/I +refs/ {gsub(",", "", $NF); print $NF}'
}
base=$(count 0)
total=$(count "$n")
echo "{\"matches\": $n, \"instructions\": $((total - base))}"
