# A node lost (regression/nodes_lib.sh): killed mid-epoch under mpirun
# (with PS shards that fit the ranks left) and under srun, killed while a
# checkpoint is written, and cut off from the network.
# check: slots 2 (a 3-node cluster and 10 s liveness timeouts: a little company)
NODES_PORT=16887
NODES_SAMPLES=8192 # epochs of 13 steps: the losses are held where they happen
. "$(dirname "$0")/../nodes_lib.sh"
nodes_cases kill-mpirun kill-srun kill-in-save cut
