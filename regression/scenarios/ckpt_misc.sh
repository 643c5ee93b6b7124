# Retention (keep), upload, loading blobs of a checkpoint into a job, the
# restart cap, and the file's layout: alignment, striping hints, a
# replicated blob read once per group.
. "$(dirname "$0")/../lib.sh"
enter
counter_data

# keep = 2: only the two newest stay, in the index and on disk
mpi keep 1 run "$JOBS/counter.cfg" --run-dir k --set checkpoint.keep=2
expect_rc keep/exit keep 0
expect_eq keep/index "$(ckpt_ls k/ckpt | cut -f1 | xargs)" "3 4"
expect_eq keep/files "$(ls k/ckpt | xargs)" "ckpt-e000003.h5 ckpt-e000004.h5 index"
# never delete the checkpoint resumed from: resume from 1 with keep = 1
mpi kbase 1 run "$JOBS/counter.cfg" --run-dir k1 --set stop.max_epochs=1
mpi k1 1 run "$JOBS/counter.cfg" --run-dir k1 --set checkpoint.keep=1
expect_eq keep/resumed-from-kept "$(ckpt_ls k1/ckpt | cut -f1 | xargs)" "1 4"

# upload: the final checkpoint and its index entry reach the other directory
mpi up 2 run "$JOBS/counter.cfg" --run-dir u --set groups.0.ranks=2 --set checkpoint.upload.to=pfs/counter
expect_rc upload/exit up 0
expect_grep upload/logged up.out "uploaded ckpt-e000004.h5 \(epoch 4, [0-9.]+ kB\) to pfs/counter"
expect_eq upload/index "$(ckpt_ls pfs/counter | cut -f1,3,5 | xargs)" "4 ckpt-e000004.h5 ok"
cmp -s u/ckpt/ckpt-e000004.h5 pfs/counter/ckpt-e000004.h5 && pass upload/identical || fail upload/identical "copies differ"
# it happens before download
n_up=$(grep -n "uploaded" up.out | cut -d: -f1)
n_dl=$(grep -n "download done" up.out | cut -d: -f1)
[ "$n_up" -lt "$n_dl" ] && pass upload/before-download || fail upload/before-download "upload at line $n_up, download at $n_dl"

# ckpt_load: blobs of a chosen epoch into another job, on another layout
mpi src 3 run "$JOBS/sharded.cfg" --run-dir src --set stop.max_epochs=2
cat >load.cfg <<'CFG'
name = "load";
groups = ( { name = "eval"; ranks = 2; } );
init = ( { group = "eval"; steps = (
    { op = "ckpt_load"; out = ["w", "n"]; dir = "src/ckpt"; epoch = 1;
      blobs = ["store/w", "store/n"]; dtype = "f64"; dist = "sharded"; }
  ); } );
download = ( { group = "eval"; steps = (
    { op = "sum"; in = "w"; out = "s" }, { op = "allreduce_sum"; in = "s"; out = "s"; },
    { op = "log"; in = "s"; } ); } );
CFG
mpi load 2 run load.cfg --run-dir load
expect_rc ckpt_load/mismatch-exit load 2
expect_grep ckpt_load/mismatch-named load.err "load.cfg:4: op 'ckpt_load': blob store/n is replicated in src/ckpt/ckpt-e000001.h5, not sharded"
sed -i 's/out = \["w", "n"\]/out = ["w"]/; s/blobs = \["store\/w", "store\/n"\]/blobs = ["store\/w"]/' load.cfg
mpi load2 2 run load.cfg --run-dir load2
expect_rc ckpt_load/exit load2 0
# epoch 1: w = 2 * (0..35) + 1 summed = 2 * 630 + 36
expect_eq ckpt_load/value "$(metric load2/metrics.jsonl log s)" 1296
sed -i 's/epoch = 1;/epoch = 5;/' load.cfg
mpi load5 2 run load.cfg --run-dir load5
expect_rc ckpt_load/no-such-epoch load5 2
expect_grep ckpt_load/no-such-message load5.err "no such checkpoint: epoch 5 in src/ckpt \(committed: 0 1 2\)"

# restart cap: runs that die before committing anything new resume the same
# checkpoint again and again; after checkpoint.max_resumes such resumes the
# next run stops with a clear message instead (exit 3), and once the
# counter file is removed the job continues
cap=(--set checkpoint.max_resumes=2)
for i in 1 2 3; do
    CAIRN_FAULT=kill:write:0:2 mpi "cap$i" 1 run "$JOBS/counter.cfg" --run-dir cap "${cap[@]}"
done
expect_grep restart-cap/resumed-again cap3.out "resuming after epoch 1 "
mpi cap4 1 run "$JOBS/counter.cfg" --run-dir cap "${cap[@]}"
expect_rc restart-cap/stopped cap4 3
expect_grep restart-cap/message cap4.err "^cairn: ckpt-e000001.h5 has been resumed 3 times in a row without a newer checkpoint being committed; stopping to break the restart loop \(checkpoint.max_resumes = 2; remove cap/ckpt/restarts to allow more\)$"
rm cap/ckpt/restarts
mpi cap5 1 run "$JOBS/counter.cfg" --run-dir cap "${cap[@]}"
expect_rc restart-cap/continues cap5 0
expect_eq restart-cap/result "$(metric cap/metrics.jsonl log result)" 145
[ ! -e cap/ckpt/restarts ] && pass restart-cap/progress-resets || fail restart-cap/progress-resets "cap/ckpt/restarts is still there"
# the same before the first checkpoint: runs killed in the epoch-0 save
# start fresh each time, and the third start in a row stops that loop too
for i in 1 2; do
    CAIRN_FAULT=kill:write:0:0 mpi "fresh$i" 1 run "$JOBS/counter.cfg" --run-dir fresh "${cap[@]}"
done
expect_eq restart-cap/fresh-killed "$(cat fresh1.rc fresh2.rc | xargs)" "137 137"
mpi fresh3 1 run "$JOBS/counter.cfg" --run-dir fresh "${cap[@]}"
expect_rc restart-cap/fresh-stopped fresh3 3
expect_grep restart-cap/fresh-message fresh3.err "^cairn: the job has started fresh 3 times in a row and died each time before a checkpoint was committed; stopping to break the restart loop \(checkpoint.max_resumes = 2; remove fresh/ckpt/restarts to allow more\)$"
expect_grep restart-cap/fresh-exit-status fresh/exit_status "^3 fatal: the job has started fresh 3 times in a row"
rm fresh/ckpt/restarts
mpi fresh4 1 run "$JOBS/counter.cfg" --run-dir fresh "${cap[@]}"
expect_rc restart-cap/fresh-continues fresh4 0
# a finished run is progress: rerunning a finished job is no restart loop
for i in 6 7 8; do mpi "cap$i" 1 run "$JOBS/counter.cfg" --run-dir cap "${cap[@]}"; done
expect_eq restart-cap/finished-reruns "$(cat cap6.rc cap7.rc cap8.rc | xargs)" "0 0 0"

# ---- the file's layout ---------------------------------------------------------------
# A group of 3 with a replicated 8 MB blob and a sharded 2.4 MB one.
cat >lay.cfg <<'CFG'
name = "lay";
groups = ( { name = "g"; ranks = 3; } );
init = ( { group = "g"; steps = (
    { op = "fill"; out = "r"; shape = [1000, 1000]; dtype = "f64"; value = 0.5; },
    { op = "fill"; out = "s"; shape = [3000, 100]; dtype = "f64"; value = 2.0; dist = "sharded"; } ); } );
epoch = ( { group = "g"; steps = ( { op = "scale"; in = "r"; out = "r"; factor = 3.0; },
                                   { op = "scale"; in = "s"; out = "s"; factor = 0.5; } ); } );
stop = { max_epochs = 2; };
CFG
# align: every dataset of 64 KiB and more starts at a multiple of it
offsets() { py 'import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(str(f[k].id.get_offset() % int(sys.argv[2])) for k in ("groups/g/r", "groups/g/s")))' "$@"; }
mpi lay-a 3 run lay.cfg --run-dir lay-a --set checkpoint.align=65536
expect_rc layout/align/exit lay-a 0
expect_eq layout/align/offsets "$(offsets lay-a/ckpt/ckpt-e000002.h5 65536)" "0 0"
# the default on a local file system packs them (no stripes to align to)
mpi lay 3 run lay.cfg --run-dir lay
expect_rc layout/packed/exit lay 0
got=$(offsets lay/ckpt/ckpt-e000002.h5 65536)
[[ $got =~ ^[0-9]+\ [0-9]+$ ]] && [ "$got" != "0 0" ] && pass layout/packed/offsets ||
    fail layout/packed/offsets "offsets modulo 65536: '$got'"
expect_eq layout/align/same-data "$(h5cmp lay/ckpt/ckpt-e000002.h5 lay-a/ckpt/ckpt-e000002.h5 /groups)" same
# striping hints are passed to MPI-IO, which creates the file with them
# (a local file system ignores them)
mpi lay-s 3 run lay.cfg --run-dir lay-s --set checkpoint.stripe_count=4 --set checkpoint.stripe_size=1048576
expect_rc layout/stripes/exit lay-s 0
expect_eq layout/stripes/same-data "$(h5cmp lay/ckpt/ckpt-e000002.h5 lay-s/ckpt/ckpt-e000002.h5 /groups)" same
# a load reads the replicated blob once for the group (rank 0 broadcasts
# it): 8 MB + 2.4 MB from the file, not 3 x 8 MB + 2.4 MB; the resumed run
# ends as the uninterrupted one
mv lay/ckpt/ckpt-e000002.h5 lay-e2.h5 # the resumed run writes it anew
mpi lay-r 3 run lay.cfg --run-dir lay --resume=1
expect_rc layout/once/exit lay-r 0
expect_eq layout/once/bytes "$(metric lay/metrics.jsonl ckpt_load bytes)" 10400000
expect_eq layout/once/same "$(h5cmp lay-e2.h5 lay/ckpt/ckpt-e000002.h5 /groups)" same
# bad values: FILE:LINE, exit 2
for bad in "align=1000:'align' must be 0 \\(packed\\), -1 \\(automatic\\) or a power of two, not 1000" \
    "stripe_size=1000:'stripe_size' must be a multiple of 65536 \\(64 KiB\\), not 1000" \
    "stripe_count=-1:'stripe_count' must be"; do
    mpi "lay-bad-${bad%%=*}" 1 check lay.cfg --set "checkpoint.${bad%%:*}"
    expect_rc "layout/bad/${bad%%=*}/exit" "lay-bad-${bad%%=*}" 2
    expect_grep "layout/bad/${bad%%=*}/says" "lay-bad-${bad%%=*}.err" "${bad#*:}"
done
