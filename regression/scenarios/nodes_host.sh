# A node lost, more ways (regression/nodes_lib.sh): with the node-local
# tier (restored from partner copies), noticed by Slurm first, and the
# batch host itself under mpirun and srun.
# check: slots 2 (a 3-node cluster and 10 s liveness timeouts: a little company)
NODES_PORT=16897
NODES_SAMPLES=8192 # epochs of 13 steps: the losses are held where they happen
. "$(dirname "$0")/../nodes_lib.sh"
nodes_cases local kill-slurm-first batch-host-mpirun batch-host-srun
