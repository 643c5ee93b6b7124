# Real I/O errors at every point of a checkpoint and of the model write.
# build/eio.so (regression/shim/eio.c), preloaded into the ranks, makes
# the n-th open, write, fsync, close, resize, reserve or rename of a file
# fail with EIO (or ENOSPC) on one rank or on all.  Epoch 2's save of the
# counter job, with two sharded blobs added so that every rank writes data
# (HDF5's metadata is written collectively, by MPI-IO's aggregators), is
# hit: with on_failure = "warn" the job goes on, says that
# epoch 2 was not saved, and ends with the right total; with "abort" every
# rank exits 3 with the reason in exit_status, and a rerun resumes from
# epoch 1 and ends like an uninterrupted run.  Either way no committed
# checkpoint changes and nothing unfinished is left or listed.  No case
# may hang: each runs under the scenario timeout.
. "$(dirname "$0")/../lib.sh"
enter
counter_data
T_TIMEOUT=60
EIO=$CAIRN_ROOT/build/eio.so
TMP=ckpt-e000002.h5.tmp
sed 's|{ op = "fill"; out = "cursor"; dtype = "i64"; value = 0; }|&,\
      { op = "fill"; out = "w1"; shape = [8, 4]; dtype = "f64"; value = 1.0; dist = "sharded"; },\
      { op = "fill"; out = "w2"; shape = [8, 4]; dtype = "f64"; value = 2.0; dist = "sharded"; }|' \
    "$JOBS/counter.cfg" >c.cfg
grep -q '"w2"' c.cfg && pass fixture/sharded-counter || fail fixture/sharded-counter "no sharded blobs in c.cfg"

# eio TAG NP RANK SPEC ARGS...: cairn ARGS on NP ranks, with CAIRN_EIO=SPEC
# on rank RANK (or all)
eio() {
    local tag=$1 np=$2 rank=$3 spec=$4
    shift 4
    CAIRN_EIO=$spec CAIRN_EIO_RANK=$rank run "$tag" mpirun --oversubscribe -np "$np" \
        -x LD_PRELOAD="$EIO" -x CAIRN_EIO -x CAIRN_EIO_RANK "$CAIRN" "$@"
}

# injected NAME TAG: the shim reports at least one failure it caused
injected() { expect_grep "$1/injected" "$2.err" "^eio.so: rank [0-9]+: [a-z]+ #[0-9]+ of .* fails with"; }

# intact NAME DIR EPOCHS: DIR/ckpt lists exactly EPOCHS, all verifying, and
# holds nothing unfinished
intact() {
    local name=$1 dir=$2 f
    expect_eq "$name/listed" "$(ckpt_ls "$dir/ckpt" | cut -f1 | xargs)" "$3"
    expect_eq "$name/no-leftovers" "$(ls "$dir/ckpt" | grep -c 'tmp')" 0
    for f in "$dir"/ckpt/ckpt-*.h5; do
        run "verify-${name//\//-}" "$CAIRN" ckpt verify "$f"
        [ "$(cat "verify-${name//\//-}.rc")" = 0 ] ||
            fail "$name/verifies" "$f does not verify" "verify-${name//\//-}.out" "verify-${name//\//-}.err"
    done
}

# hit NAME NP RANK SPEC MESSAGE: epoch 2's save fails as SPEC says, under
# both policies, with MESSAGE (a regex) as the reason.  With PROBE=1, a
# SPEC that made nothing fail in a run that ended well (past the rank's
# last write) returns 1 and tests nothing more.
hit() {
    local name=$1 np=$2 rank=$3 spec=$4 msg=$5 r=${1//\//-}
    eio "$r-warn" "$np" "$rank" "$spec" run c.cfg --run-dir "$r-w" --set groups.0.ranks="$np"
    [ "${PROBE:-}" = 1 ] && [ "$(cat "$r-warn.rc")" = 0 ] && ! grep -q "^eio.so" "$r-warn.err" && return 1
    injected "$name/warn" "$r-warn"
    expect_rc "$name/warn/exit" "$r-warn" 0
    expect_count "$name/warn/says" "$r-warn.out" "warning: checkpoint after epoch 2 failed: $msg" 1
    expect_eq "$name/warn/total" "$(metric "$r-w/metrics.jsonl" log result)" 145
    intact "$name/warn" "$r-w" "0 1 3 4"
    eio "$r-abort" "$np" "$rank" "$spec" run c.cfg --run-dir "$r-a" \
        --set groups.0.ranks="$np" --set checkpoint.on_failure=abort
    injected "$name/abort" "$r-abort"
    expect_rc "$name/abort/exit" "$r-abort" 3
    expect_grep "$name/abort/status" "$r-a/exit_status" "^3 fatal: checkpoint after epoch 2 failed \(checkpoint.on_failure = \"abort\"\): $msg"
    intact "$name/abort" "$r-a" "0 1"
    mpi "$r-rerun" "$np" run c.cfg --run-dir "$r-a" --set groups.0.ranks="$np"
    expect_grep "$name/rerun/resumes" "$r-rerun.out" "resuming after epoch 1 "
    expect_eq "$name/rerun/total" "$(metric "$r-a/metrics.jsonl" log result)" 145
    return 0
}

# creating the file: rank 0 makes it, every rank opens it before MPI-IO does
side hit create/rank0 2 0 "open:$TMP:1+" "cannot create .*$TMP: Input/output error"
side hit create/rank1 2 1 "open:$TMP:1+" "cannot open .*$TMP: Input/output error"
side hit create/all 2 all "open:$TMP:1+" "cannot create .*$TMP: Input/output error"
# each single write of each rank (data and HDF5's metadata, the last ones
# in the close), then every write
writes() { # RANK: each of its writes in turn, until one past its last
    local rank=$1 n
    for n in $(seq 1 40); do
        PROBE=1 hit "write/rank$rank/n$n" 2 "$rank" "write:$TMP:$n" "cannot write .*$TMP: MPI_File_write_at(_all)? wrote 0 of [0-9]+ bytes: Input/output error" || break
    done
    [ "$n" -gt 3 ] && pass "write/rank$rank/several" || fail "write/rank$rank/several" "only $((n - 1)) writes seen"
}
side writes 0
side writes 1
side hit write/all 2 all "write:$TMP:1+" "cannot write .*$TMP: MPI_File_write_at(_all)? wrote 0 of [0-9]+ bytes: Input/output error"
side hit write/full 2 1 "write:$TMP:2:ENOSPC" "cannot write .*$TMP: MPI_File_write_at(_all)? wrote 0 of [0-9]+ bytes: No space left on device"
# the sync after the close, on every rank
side hit sync/rank0 2 0 "fsync:$TMP:1+" "cannot fsync .*$TMP: Input/output error"
side hit sync/rank1 2 1 "fsync:$TMP:1+" "cannot fsync .*$TMP: Input/output error"
side hit sync/all 2 all "fsync:$TMP:1+" "cannot fsync .*$TMP: Input/output error"
# closing
side hit close/rank0 2 0 "close:$TMP:1+" "cannot close .*$TMP: Input/output error"
side hit close/rank1 2 1 "close:$TMP:1+" "cannot close .*$TMP: Input/output error"
side hit close/all 2 all "close:$TMP:1+" "cannot close .*$TMP: Input/output error"
# HDF5's final resize, and rank 0's space reserve
side hit resize/rank0 2 0 "truncate:$TMP:1+" "cannot write .*$TMP: MPI_File_set_size: Input/output error"
side hit resize/all 2 all "truncate:$TMP:1+" "cannot write .*$TMP: MPI_File_set_size: Input/output error"
side hit reserve/rank0 2 0 "allocate:$TMP:1+:ENOSPC" "cannot reserve [0-9]+ bytes for .*$TMP: No space left on device"
# a file system without fallocate (NFS 3, some parallel ones): no
# reservation, said once, and never the block-by-block emulation (one
# write of every byte); the checkpoints are whole and the total right.
# noalloc: the reserve's allocation is refused; noalloc2: the reserve is
# allocated, the file's own allocation is refused.
noalloc() { # NAME:FILE
    local n=${1%%:*}
    eio "$n" 2 all "allocate:${1#*:}:1+:EOPNOTSUPP" run c.cfg --run-dir "$n" --set groups.0.ranks=2
    injected "$n" "$n"
    expect_rc "$n/exit" "$n" 0
    expect_count "$n/said" "$n.out" "note: the file system of .*$n/ckpt cannot reserve space ahead \(no fallocate\)" 1
    expect_eq "$n/total" "$(metric "$n/metrics.jsonl" log result)" 145
    intact "$n" "$n" "0 1 2 3 4"
}
side noalloc noalloc:reserve
side noalloc noalloc2:h5.tmp
# the commit (rank 0): the rename, then the index (epoch 2's is its third)
side hit rename/rank0 2 0 "rename:$TMP:1" "cannot rename .*$TMP: Input/output error"
side hit index-write/rank0 2 0 "write:index.tmp:3" "cannot write .*index.tmp: Input/output error"
side hit index-sync/rank0 2 0 "fsync:index.tmp:3" "cannot fsync .*index.tmp: Input/output error"
side hit index-close/rank0 2 0 "close:index.tmp:3" "cannot close .*index.tmp: Input/output error"
side hit index-rename/rank0 2 0 "rename:index.tmp:3" "cannot rename .*index.tmp: Input/output error"
# three ranks, the middle one failing in its data write
side hit write/3ranks 3 1 "write:$TMP:1" "cannot write .*$TMP: MPI_File_write_at(_all)? wrote 0 of [0-9]+ bytes: Input/output error"
sides_done

# An open that fails inside MPI-IO after every rank opened the file itself
# splits the ranks inside HDF5; the watchdog ends it (bounded, exit 3), and
# the checkpoints stay as they were.  (10 s: no healthy step of this job
# comes near it on a loaded machine, so the suite runs it beside others.)
eio mpiopen 2 1 "open:$TMP:2" run c.cfg --run-dir mo --set groups.0.ranks=2 \
    --set watchdog.timeout=10
injected mpi-open mpiopen
expect_rc mpi-open/exit mpiopen 3
expect_grep mpi-open/status mo/exit_status "^3 stalled: "
expect_eq mpi-open/listed "$(ckpt_ls mo/ckpt | cut -f1 | xargs)" "0 1"
mpi mpiopen-rerun 2 run c.cfg --run-dir mo --set groups.0.ranks=2
expect_grep mpi-open/rerun/resumes mpiopen-rerun.out "resuming after epoch 1 "
expect_eq mpi-open/rerun/total "$(metric mo/metrics.jsonl log result)" 145
intact mpi-open/rerun mo "0 1 2 3 4" # the killed save's files are gone too

# The model: trainer 0 writes model.h5.tmp, then renames it.  Any failure
# is exit 3 with the reason, leaves no model (never a damaged one), and the
# rerun writes the model an uninterrupted run writes.
synth data 2 d.h5 600 16 5 4 4
cp "$CAIRN_ROOT/regression/jobs/mlp.cfg" p.cfg
mpi base 4 run p.cfg --run-dir base --set stop.max_epochs=1
expect_rc model/base base 0
model_hit() {
    local name=$1 spec=$2 msg=$3 r=m-${1//\//-}
    eio "$r" 4 0 "$spec" run p.cfg --run-dir "$r" --set stop.max_epochs=1
    [ "${PROBE:-}" = 1 ] && [ "$(cat "$r.rc")" = 0 ] && ! grep -q "^eio.so" "$r.err" && return 1 # as hit's
    injected "model/$name" "$r"
    expect_rc "model/$name/exit" "$r" 3
    expect_grep "model/$name/status" "$r/exit_status" "^3 fatal: .*model.h5 not written .*: $msg"
    [ ! -e "$r/model.h5" ] && [ ! -e "$r/model.h5.tmp" ] && pass "model/$name/no-model" ||
        fail "model/$name/no-model" "$(ls "$r")"
    mpi "$r-rerun" 4 run p.cfg --run-dir "$r" --set stop.max_epochs=1
    expect_rc "model/$name/rerun" "$r-rerun" 0
    same_bytes "model/$name/same-model" base/model.h5 "$r/model.h5"
    return 0
}
# (cairn creates model.h5.tmp, then HDF5 opens it: either open may fail)
side model_hit create "open:model.h5.tmp:1+" "cannot create .*model.h5.tmp: Input/output error"
side model_hit h5create "open:model.h5.tmp:2+" "cannot create .*model.h5.tmp: H5Fcreate failed: .*Input/output error"
model_writes() {
    local n
    for n in $(seq 1 30); do
        PROBE=1 model_hit "write/n$n" "write:model.h5.tmp:$n" "H5[A-Za-z]+ failed: .*Input/output error" || break
    done
    [ "$n" -gt 3 ] && pass model/write/several || fail model/write/several "only $((n - 1)) writes seen"
}
side model_writes
side model_hit fsync "fsync:model.h5.tmp:1" "cannot fsync .*model.h5.tmp: Input/output error"
# closes: HDF5's look at the file it is to create, H5Fclose, cairn's own
side model_hit close "close:model.h5.tmp:2" "H5Fclose failed: .*Input/output error"
side model_hit close-own "close:model.h5.tmp:3" "cannot close .*model.h5.tmp: Input/output error"
side model_hit rename "rename:model.h5.tmp:1" "cannot rename .*model.h5.tmp: Input/output error"
sides_done
