# Several nodes (regression/nodes_lib.sh): the demo across 3 nodes under
# mpirun and srun, a checkpoint directory or node-local tier that is not
# what it claims, UDP heartbeats dropped, preemption by USR1 and by the
# time limit, and a cluster with a dead node stopped clean.
# check: slots 2 (a 3-node cluster and 10 s liveness timeouts: a little company)
NODES_PORT=16847
NODES_SAMPLES=8192 # epochs of 13 steps: the preemptions are waited for
. "$(dirname "$0")/../nodes_lib.sh"
nodes_cases across nodelocal local-shared udp-blocked usr1 limit stop
