# A checkpoint directory on a small file system (a tmpfs of its own) that
# is full from the start, fills while a save allocates its file, fills
# while the data is written, or fills just before the index is updated.
# Every rank must come back within the timeout (no rank left in a
# collective), release the file (no crash at exit), leave no temp or
# reserve file behind, and follow checkpoint.on_failure: warn trains on
# with the same result, abort exits 3 naming the cause.  The checkpoint
# committed before stays the newest, verifies, and a rerun resumes from it
# with the uninterrupted result.  The same with a background save.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=90
mkdir probe
if ! mount -t tmpfs -o size=1m tmpfs probe 2>/dev/null; then
    echo "skip - $T_NAME: cannot mount a tmpfs here (needs root)"
    exit 0
fi
umount probe
mounts=()
trap 'for m in "${mounts[@]}"; do umount -l "$m"; done' EXIT

# small_fs DIR SIZE: DIR on a tmpfs of SIZE
small_fs() {
    mkdir -p "$1" && mount -t tmpfs -o "size=$2" tmpfs "$1" && mounts+=("$PWD/$1")
}

# a 4 MiB sharded f64 state on 2 ranks, 4 epochs
job=("$JOBS/sharded.cfg" --set groups.0.ranks=2 --set 'init.0.steps.0.shape=[32768,16]'
    --set stop.max_epochs=4)
mpi ref 2 run "${job[@]}" --run-dir ref
expect_rc ref/exit ref 0
want=$(metric ref/metrics.jsonl log result)

# clean NAME DIR: nothing unfinished is left in the checkpoint directory
clean() {
    expect_eq "$1/no-leftovers" "$(ls "$2" | grep -Ec '\.tmp|\.reserve')" 0
}

# full from the start, each policy
for policy in warn abort; do
    small_fs "full-$policy" 2m
    dd if=/dev/zero of="full-$policy/fill.ballast" bs=64k 2>/dev/null
    mpi "full-$policy" 2 run "${job[@]}" --run-dir "run-$policy" \
        --set "checkpoint.dir=\"$PWD/full-$policy\"" --set "checkpoint.on_failure=\"$policy\""
done
expect_rc full-warn/exit full-warn 0
expect_grep full-warn/warned full-warn.out "warning: checkpoint after epoch 0 failed: .*no room for a checkpoint of [0-9]+ bytes: .*No space left on device"
expect_grep full-warn/nothing-to-fall-back-on full-warn.out "no checkpoint is committed yet, so a rerun starts over"
expect_eq full-warn/same-result "$(metric run-warn/metrics.jsonl log result)" "$want"
expect_eq full-warn/nothing-committed "$(ls full-warn)" fill.ballast
expect_rc full-abort/exit full-abort 3
expect_grep full-abort/cause full-abort.err "checkpoint after epoch 0 failed \(checkpoint.on_failure = \"abort\"\): .*No space left on device"
expect_eq full-abort/nothing-committed "$(ls full-abort)" fill.ballast

# filled at a point of epoch 2's save: allocate (after the reserve, before
# the file is allocated), write (between datasets, after it is), and
# after_rename (just before the index is updated)
# where each fill must surface: at the allocation (the file cannot get its
# space), or, once the file's space is allocated, not in the data writes
# but at the index update
declare -A surfaces=([allocate]="cannot reserve [0-9]+ bytes for .*ckpt-e000002.h5.tmp: No space left on device"
    [write]="cannot write .*/index.tmp: No space left on device"
    [after_rename]="cannot write .*/index.tmp: No space left on device")
# async-write: the write fill during a background save (checkpoint.async),
# whose failure is taken when the run next looks (a step boundary, or the
# next save), under the same policy
for case in allocate write after_rename async-write; do
    point=${case#async-} sets=()
    [ "$case" != "$point" ] && sets=(--set checkpoint.async=true)
    for policy in warn abort; do
        name=$case-$policy
        small_fs "$name" 16m
        CAIRN_FAULT=fill:$point:$([ $point = write ] && echo 1 || echo 0):2 \
            mpi "$name" 2 run "${job[@]}" --run-dir "run-$name" \
            --set "checkpoint.dir=\"$PWD/$name\"" --set "checkpoint.on_failure=\"$policy\"" "${sets[@]}"
        expect_grep "$name/filled" "$name.err" "CAIRN_FAULT fills the file system of .* at $point"
        [ ${#sets[@]} = 0 ] ||
            expect_count "$name/in-background" "run-$name/metrics.jsonl" '"kind":"ckpt_stall","epoch":2,.*"background":true' 1
        if [ $policy = warn ]; then
            expect_rc "$name/exit" "$name" 0
            expect_grep "$name/warned" "$name.out" "warning: checkpoint after epoch 2 failed: ${surfaces[$point]}; the last committed checkpoint stays the newest"
            expect_eq "$name/same-result" "$(metric "run-$name/metrics.jsonl" log result)" "$want"
        else
            expect_rc "$name/exit" "$name" 3
            expect_grep "$name/cause" "$name.err" "checkpoint after epoch 2 failed \(checkpoint.on_failure = \"abort\"\): ${surfaces[$point]}"
        fi
        clean "$name" "$name"
        run "$name-ls" "$CAIRN" ckpt ls "$name"
        expect_eq "$name/newest-committed" "$(tail -n 1 "$name-ls.out" | cut -f1,5)" "1	ok"
        run "$name-verify" "$CAIRN" ckpt verify "$name/ckpt-e000001.h5"
        expect_rc "$name/previous-verifies" "$name-verify" 0
    done
    # with room again, the aborted run resumes from epoch 1 and ends as the uninterrupted one
    rm -f "$case-abort/fill.ballast"
    mpi "$case-resume" 2 run "${job[@]}" --run-dir "run-$case-abort" \
        --set "checkpoint.dir=\"$PWD/$case-abort\"" "${sets[@]}"
    expect_rc "$case/resume-exit" "$case-resume" 0
    expect_grep "$case/resumed-from-1" "$case-resume.out" "resuming after epoch 1 "
    expect_eq "$case/resume-result" "$(metric "run-$case-abort/metrics.jsonl" log result | awk '{print $NF}')" "$want"
done
