#!/usr/bin/env bash
# Checkpoint throughput: a 1 GiB sharded state over 4 ranks, saved and
# loaded by cairn, against raw sequential I/O of the same bytes to the same
# directory in the same run: dd conv=fdatasync for writes, dd for reads.
# Reads start cold (pages dropped with posix_fadvise) on both sides.
# Prints the figures and the ratios (target: >= 0.8 for both).
#
# BENCH_NODES=3 runs cairn's ranks on a private 3-node Slurm cluster
# (slurm/testcluster/nodes, as root), one or two ranks per node, so the
# checkpoint is written from several nodes over TCP (ckpt_nodes.sh).
# BENCH_STATE=table saves an embedding table instead (ckpt_table.sh):
# 10,000,000 x 16 f32 with Adam's two moments (1.92 GB) on the 2 PS
# shards of a model job with 2 replicas.
# BENCH_TIER=local adds a node-local tier (checkpoint.local, ckpt_local.sh):
# its save (each rank's part in a directory of its node, and on several
# nodes a partner copy on the next) against dd of the bytes the tier
# writes, and the flush to the shared directory (the write above).
set -eu
cd "$(dirname "$0")/../.."
root=$PWD
cairn=$root/build/cairn
nodes=${BENCH_NODES:-1}
dir=${BENCH_DIR:-$root/build/bench/ckpt}
[ "$nodes" -gt 1 ] && dir=${BENCH_DIR:-$root/build/bench/ckpt-nodes}
rows=${BENCH_ROWS:-131072} # x 1024 f64 = 1 GiB
state=${BENCH_STATE:-fill}
[ "$state" = table ] && dir=${BENCH_DIR:-$root/build/bench/ckpt-table}
tier=${BENCH_TIER:-shared}
[ "$tier" = local ] && dir=${BENCH_DIR:-$dir-local}
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
bytes=$((rows * 1024 * 8))
launch=(mpirun -np 4)
if [ "$nodes" -gt 1 ]; then
    export CAIRN_SLURM_PORT=${CAIRN_SLURM_PORT:-16857}
    cluster=$dir/cluster
    trap '"$root/slurm/testcluster/nodes" stop "$cluster" >/dev/null 2>&1' EXIT
    "$root/slurm/testcluster/nodes" start "$cluster" "$nodes" >/dev/null
    net=$(awk '$2 == "ctl" {print $1}' "$cluster/hosts" | cut -d. -f1-3)
    export OMPI_MCA_btl_tcp_if_include=$net.0/24 OMPI_MCA_oob_tcp_if_include=$net.0/24
    launch=("$root/slurm/testcluster/nodes" run "$cluster" srun -N"$nodes" -n4 --distribution=cyclic --mpi=pmix)
fi

if [ "$state" = table ]; then
    table=10000000
    bytes=$((table * 16 * 4 * 3))
    /usr/bin/python3 -c '
import h5py, numpy as np
r = np.random.default_rng(1); n = 65536
with h5py.File("table.h5", "w") as f:
    f["features"] = r.standard_normal((n, 1)).astype(np.float32)
    f["labels"] = r.integers(0, 2, n).astype(np.int32)
    f["ids"] = r.integers(0, '"$table"', n)'
    cat >bench.cfg <<CFG
name = "bench_ckpt_table";
model = { inputs = 1; embeddings = ( { name = "t"; rows = $table; dim = 16; ids = "ids"; } );
          layers = ( { units = 2; } ); };
data = { file = "table.h5"; batch = 1024; };
replicas = 2;
pipeline = { chunks = 2; };
ps = { shards = 2; optimizer = "adam"; };
steps_per_epoch = 4;
stop = { max_epochs = 1; };
CFG
else
cat >bench.cfg <<CFG
name = "bench_ckpt";
groups = ( { name = "state"; ranks = 4; } );
init = ( { group = "state"; steps = (
    { op = "fill"; out = "w"; shape = [$rows, 1024]; dtype = "f64"; value = 1.5; dist = "sharded"; }
  ); } );
epoch = ( { group = "state"; steps = ( { op = "scale"; in = "w"; out = "w"; factor = 2.0; } ); } );
stop = { max_epochs = 1; };
CFG
fi
# the node-local tier: its save after init (epoch 0, flushed too)
local_dir=$dir/nodelocal
[ "$nodes" -gt 1 ] && local_dir=$cluster/nodelocal
[ "$tier" = local ] && echo "checkpoint = { local = \"$local_dir\"; };" >>bench.cfg

drop() { /usr/bin/python3 -c '
import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.fsync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$@"; }
secs() { /usr/bin/python3 -c 'import sys, re; m = re.search(r"copied, ([0-9.]+) s", open(sys.argv[1]).read()); print(m.group(1))' "$1"; }
metric() { /usr/bin/python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["kind"] == sys.argv[2]]
print(min(r["seconds"] for r in rows))' "$@"; }

# The disk is shared and noisy: raw and cairn take turns, three rounds, and
# each figure is the best of its rounds.
best() { printf '%s\n' "$@" | sort -g | head -n 1; }
raw_w=() raw_r=() raw_l=()
copies=1
[ "$nodes" -gt 1 ] && copies=2 # each part and its partner copy
for i in 1 2 3; do
    if [ "$tier" = local ]; then
        mkdir -p "$dir/nodelocal"
        dd if=/dev/zero of="$dir/nodelocal/raw.bin" bs=16M count=$((copies * bytes / 16777216)) conv=fdatasync 2>raw_l.txt
        raw_l+=("$(secs raw_l.txt)")
        rm "$dir/nodelocal/raw.bin"
    fi
    dd if=/dev/zero of=raw.bin bs=16M count=$((bytes / 16777216)) conv=fdatasync 2>raw_w.txt
    raw_w+=("$(secs raw_w.txt)")
    drop raw.bin
    dd if=raw.bin of=/dev/null bs=16M 2>raw_r.txt
    raw_r+=("$(secs raw_r.txt)")
    rm raw.bin
    # cairn: a fresh run saves after init and after epoch 1; a resume of
    # epoch 1 then only loads it, cold
    "${launch[@]}" "$cairn" run bench.cfg --run-dir run --resume=none --force >save.log
    drop run/ckpt/*.h5
    "${launch[@]}" "$cairn" run bench.cfg --run-dir run --resume=1 >load.log
done
raw_w=$(best "${raw_w[@]}")
raw_r=$(best "${raw_r[@]}")
save=$(metric run/metrics.jsonl ckpt_save)
load=$(metric run/metrics.jsonl ckpt_load)
grep "checkpoint saved: epoch 1" save.log | sed 's/.*cairn: //'
grep "checkpoint loaded" load.log | sed 's/.*cairn: //'
if [ "$tier" = local ]; then
    grep "checkpoint saved (node-local)" save.log | sed 's/.*cairn: //'
    /usr/bin/python3 - "$bytes" "$copies" "$(best "${raw_l[@]}")" "$(metric run/metrics.jsonl ckpt_local_save)" <<'PY'
import sys
b, copies, rl, cl = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
gb = b * copies / 1e9
print(f"node-local write ({copies} cop{'y' if copies == 1 else 'ies'}): raw {gb / rl:.3f} GB/s, "
      f"cairn {gb / cl:.3f} GB/s, ratio {rl / cl:.2f} (target 0.9); the flush is the write below (target 0.8)")
PY
fi

/usr/bin/python3 - "$bytes" "$raw_w" "$raw_r" "$save" "$load" "$nodes" "$state" <<'PY'
import sys
b, rw, rr, cw, cr = int(sys.argv[1]), *map(float, sys.argv[2:6])
gb = b / 1e9
what = "embedding table state" if sys.argv[7] == "table" else "state"
print(f"{what} {b / 2**30:.2f} GiB over 4 ranks on {sys.argv[6]} node(s)")
print(f"{'':8}{'raw GB/s':>10}{'cairn GB/s':>12}{'ratio':>8}")
print(f"{'write':8}{gb / rw:10.3f}{gb / cw:12.3f}{rw / cw:8.2f}")
print(f"{'read':8}{gb / rr:10.3f}{gb / cr:12.3f}{rr / cr:8.2f}")
PY
