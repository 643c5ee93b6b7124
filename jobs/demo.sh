#!/usr/bin/env bash
# `make demo`: run the counter job on 2 ranks and show its result.
set -eu
cd "$(dirname "$0")/.."
root=$PWD
cairn=$root/build/cairn
work=$root/build/demo
mkdir -p "$work"
cd "$work"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1

"$cairn" data range --out counter.h5 --count 10
rm -rf counter
echo "== cairn print (the plan for 2 ranks)"
"$cairn" print "$root/jobs/counter.cfg" --set groups.0.ranks=2
echo "== mpirun -np 2 cairn run jobs/counter.cfg"
mpirun -np 2 "$cairn" run "$root/jobs/counter.cfg" --set groups.0.ranks=2 --run-dir counter
echo "== run directory $work/counter: $(ls counter | tr '\n' ' ')"
