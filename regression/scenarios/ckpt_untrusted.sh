# Checkpoint files are untrusted input.  Each kind of damage in
# regression/damage.py (attributes of the wrong shape or type, metadata
# changed without its checksum, datasets of the wrong shape, type, name or
# declared size) is rejected alike by `ckpt verify` (exit 1, naming what is
# wrong) and by the loader, which marks the file bad and falls back to the
# checkpoint before, ending with the uninterrupted result.  A valid file
# whose string attribute has no terminator is accepted by both.  A FIFO
# named in the index, a restart counter at INT_MAX and a 100,000-line index
# are handled without hanging, overflowing or crawling.
. "$(dirname "$0")/../lib.sh"
enter
counter_data
set_2=(--set groups.0.ranks=2)
mpi ref 2 run "$JOBS/counter.cfg" --run-dir ref "${set_2[@]}" --set stop.max_epochs=3
expect_rc ref/exit ref 0

# kind: what verify and the loader must say
declare -A why=(
    [checksum_array]="attribute 'checksum' does not hold exactly one value"
    [epoch_array]="attribute 'epoch' does not hold exactly one value"
    [step_array]="attribute 'step' does not hold exactly one value"
    [done_array]="attribute 'done' does not hold exactly one value"
    [format_array]="attribute 'format_version' does not hold exactly one value"
    [format_string]="attribute 'format_version' is not an integer"
    [ranks_array]="/groups/main: attribute 'ranks' does not hold exactly one value"
    [settings_array]="attribute 'settings' does not hold exactly one value"
    [dist_array]="/groups/main/total: attribute 'dist' does not hold exactly one value"
    [dims9]="/groups/main/total: it has 9 dimensions, not 0"
    [epoch_changed]="its metadata \(format, epoch, step, done, settings or group sizes\) does not match its checksum"
    [settings_changed]="its metadata \(format, epoch, step, done, settings or group sizes\) does not match its checksum"
    [settings_dup]="its settings list blob main/total twice"
    [format_changed]="its metadata \(format, epoch, step, done, settings or group sizes\) does not match its checksum"
    [shape_crafted]="/groups/main/total: it has 1 dimensions, not 0"
    [swapped]="/groups/main/(total|cursor): checksum mismatch"
    [huge_chunked]="/groups/main/total: it has 1 dimensions, not 0"
    [deleted_dataset]="/groups/main/cursor: no such dataset"
    [deleted_group]="group /groups/main is missing"
    [dist_wrong]="/groups/main/total: it is stored sharded, not replicated"
    [dist_missing]="/groups/main/total: attribute 'dist' is missing"
    [dtype_changed]="/groups/main/total: its element type is not i64"
    [epoch_missing]="attribute 'epoch' is missing"
    [settings_missing]="attribute 'settings' is missing"
    [meta_checksum_missing]="attribute 'meta_checksum' is missing"
    [checksum_alg_missing]="attribute 'checksum_alg' is missing"
    [checksum_float]="/groups/main/total: attribute 'checksum' is not an integer"
)
damaged2() { # KIND: verify and the loader on 2 ranks
    local kind=$1 f
    cp -r ref "$kind"
    f=$kind/ckpt/ckpt-e000003.h5
    /usr/bin/python3 "$CAIRN_ROOT/regression/damage.py" "$kind" "$f" || fail "$kind/damaged" "damage.py failed"
    run "$kind-verify" "$CAIRN" ckpt verify "$f"
    expect_rc "$kind/verify-rejects" "$kind-verify" 1
    expect_grep "$kind/verify-says" "$kind-verify.out" "damaged: .*${why[$kind]}"
    mpi "$kind-run" 2 run "$JOBS/counter.cfg" --run-dir "$kind" "${set_2[@]}"
    expect_rc "$kind/exit" "$kind-run" 0
    expect_grep "$kind/loader-says" "$kind-run.out" "warning: checkpoint .*ckpt-e000003.h5 \(epoch 3 step 0\) cannot be loaded: .*${why[$kind]}.*; marking it bad"
    expect_grep "$kind/fell-back" "$kind-run.out" "resuming after epoch 2 "
    expect_eq "$kind/result" "$(metric "$kind/metrics.jsonl" log result | awk '{print $NF}')" 145
}
for kind in "${!why[@]}"; do side damaged2 "$kind"; done
sides_done

# sharded state one row longer than the job's, with a correct checksum
mpi sref 3 run "$JOBS/sharded.cfg" --run-dir sref --set stop.max_epochs=3
cp -r sref rows
/usr/bin/python3 "$CAIRN_ROOT/regression/damage.py" w_rows rows/ckpt/ckpt-e000003.h5
run rows-verify "$CAIRN" ckpt verify rows/ckpt/ckpt-e000003.h5
expect_grep rows/verify-says rows-verify.out "damaged: .*/groups/store/w: its shape is \[13, 3\], not \[12, 3\]"
mpi rows-run 3 run "$JOBS/sharded.cfg" --run-dir rows
expect_grep rows/fell-back rows-run.out "resuming after epoch 2 "
expect_eq rows/result "$(metric rows/metrics.jsonl log result | awk '{print $NF}')" \
    "$(mpi sfull 3 run "$JOBS/sharded.cfg" --run-dir sfull; metric sfull/metrics.jsonl log result)"

# valid, though written by another tool: accepted by both
cp -r ref unterminated
/usr/bin/python3 "$CAIRN_ROOT/regression/damage.py" unterminated unterminated/ckpt/ckpt-e000003.h5
run unterminated-verify "$CAIRN" ckpt verify unterminated/ckpt/ckpt-e000003.h5
expect_rc unterminated/verify-accepts unterminated-verify 0
mpi unterminated-run 2 run "$JOBS/counter.cfg" --run-dir unterminated "${set_2[@]}"
expect_grep unterminated/resumed unterminated-run.out "resuming after epoch 3 "

# a consistent file of another format: refused (exit 2), not marked bad
cp -r ref other
/usr/bin/python3 "$CAIRN_ROOT/regression/damage.py" format_other other/ckpt/ckpt-e000003.h5
run other-verify "$CAIRN" ckpt verify other/ckpt/ckpt-e000003.h5
expect_rc other/verify-refuses other-verify 2
expect_grep other/verify-says other-verify.err "it has checkpoint format 7; this cairn reads format 2"
mpi other-run 2 run "$JOBS/counter.cfg" --run-dir other "${set_2[@]}"
expect_rc other/run-refuses other-run 2
run other-ls "$CAIRN" ckpt ls other/ckpt
expect_eq other/not-marked-bad "$(grep -c 'bad$' other-ls.out)" 0

# a FIFO where the index names a checkpoint: skipped, not opened
cp -r ref fifo
rm fifo/ckpt/ckpt-e000003.h5 && mkfifo fifo/ckpt/ckpt-e000003.h5
run fifo-verify "$CAIRN" ckpt verify fifo/ckpt/ckpt-e000003.h5
expect_grep fifo/verify-says fifo-verify.out "not a regular file"
mpi fifo-run 2 run "$JOBS/counter.cfg" --run-dir fifo "${set_2[@]}"
expect_rc fifo/exit fifo-run 0
expect_grep fifo/fell-back fifo-run.out "resuming after epoch 2 "

# data outside the file (counter's total behind an external link to a
# FIFO; sharded's w in external storage, a regular file): verify and
# extract say so without opening anything outside, and a resume marks the
# file bad and falls back
outside() { # KIND REF JOB RANKS BLOB WHY
    local kind=$1
    cp -r "$2" "$kind"
    mkfifo "$kind/ckpt/fifo"
    /usr/bin/python3 "$CAIRN_ROOT/regression/damage.py" "$kind" "$kind/ckpt/ckpt-e000003.h5"
    run "$kind-verify" "$CAIRN" ckpt verify "$kind/ckpt/ckpt-e000003.h5"
    expect_rc "$kind/verify-fails" "$kind-verify" 1
    expect_grep "$kind/verify-says" "$kind-verify.out" "/groups/$5: $6"
    run "$kind-extract" "$CAIRN" ckpt extract "$kind/ckpt" --epoch 3 --blob "$5" -o "$kind.h5"
    expect_rc "$kind/extract-fails" "$kind-extract" 3
    mpi "$kind-run" "$4" run "$3" --run-dir "$kind" --set "groups.0.ranks=$4"
    expect_rc "$kind/run-exit" "$kind-run" 0
    expect_grep "$kind/fell-back" "$kind-run.out" "resuming after epoch 2 "
}
outside external_link ref "$JOBS/counter.cfg" 2 main/total "a link on its path leaves the file"
outside external_storage sref "$JOBS/sharded.cfg" 3 store/w "its data is stored outside the file"

# a FIFO at the next save's temporary name is cairn's to remove, not to open
cp -r ref fifo-tmp
mkfifo fifo-tmp/ckpt/ckpt-e000004.h5.tmp
mpi fifo-tmp-run 2 run "$JOBS/counter.cfg" --run-dir fifo-tmp "${set_2[@]}" --set stop.max_epochs=4
expect_rc fifo-tmp/exit fifo-tmp-run 0
expect_grep fifo-tmp/saved fifo-tmp-run.out "checkpoint saved: epoch 4 step 0 "

# a data file that is a FIFO: bad input at start-up (exit 2), never opened
mkfifo fifo-data.h5
mpi fifo-data 2 run "$JOBS/counter.cfg" --run-dir fifo-data "${set_2[@]}" --set 'epoch.0.steps.0.file="fifo-data.h5"'
expect_rc fifo-data/exit fifo-data 2
expect_grep fifo-data/says fifo-data.err "'fifo-data.h5' is not a regular file"

# a restart counter at INT_MAX does not overflow: the cap stops the loop
cp -r ref restarts
printf 'ckpt-e000003.h5 2147483647\n' >restarts/ckpt/restarts
mpi restarts-run 2 run "$JOBS/counter.cfg" --run-dir restarts "${set_2[@]}"
expect_rc restarts/capped restarts-run 3
expect_grep restarts/message restarts-run.err "ckpt-e000003.h5 has been resumed 2147483647 times in a row"
# ... and a negative one counts from zero
printf 'ckpt-e000003.h5 -5\n' >restarts/ckpt/restarts
mpi restarts-neg 2 run "$JOBS/counter.cfg" --run-dir restarts "${set_2[@]}"
expect_rc restarts/negative-resumes restarts-neg 0

# an index of 100,000 lines (each checkpoint listed twice: the later line
# wins) is read whole
cp -r ref long
/usr/bin/python3 - long/ckpt/index <<'PY'
import sys
with open(sys.argv[1], "a") as f:
    for e in range(10, 50010):
        f.write(f"{e}\t0\tckpt-e{e:06d}.h5\t1\tbad\n")
    for e in range(10, 50010):
        f.write(f"{e}\t0\tckpt-e{e:06d}.h5\t2\tbad\n")
PY
run long-ls "$CAIRN" ckpt ls long/ckpt
expect_rc long/ls-exit long-ls 0
expect_eq long/ls-lines "$(wc -l <long-ls.out)" 50004
expect_eq long/later-wins "$(grep -c '	2	bad$' long-ls.out)" 50000
mpi long-run 2 run "$JOBS/counter.cfg" --run-dir long "${set_2[@]}"
expect_grep long/resumed long-run.out "resuming after epoch 3 "

# verify --job: the loader's answer for that job
run job-ok "$CAIRN" ckpt verify ref/ckpt/ckpt-e000003.h5 --job "$JOBS/counter.cfg" "${set_2[@]}"
expect_rc verify-job/accepts job-ok 0
run job-other "$CAIRN" ckpt verify ref/ckpt/ckpt-e000003.h5 --job "$JOBS/sharded.cfg"
expect_rc verify-job/other-job job-other 2
expect_grep verify-job/says-why job-other.err "was written for other settings: seed: the checkpoint has 1, this job 3"

# The multi-rank read path is as strict: every damaged file above again,
# loaded on 3 ranks (the counter's state is replicated: every rank reads
# it whole and each must reach the same verdict), and sharded state whose
# parts disagree: one row of w changed, its checksum kept, in the part one
# rank of a 2- or 3-rank split loads (the first, a middle, the last).
mpi ref3 3 run "$JOBS/counter.cfg" --run-dir ref3 --set groups.0.ranks=3 --set stop.max_epochs=3
damaged3() { # KIND: the loader on 3 ranks
    local kind=$1
    cp -r ref3 "$kind-3"
    /usr/bin/python3 "$CAIRN_ROOT/regression/damage.py" "$kind" "$kind-3/ckpt/ckpt-e000003.h5"
    mpi "$kind-3-run" 3 run "$JOBS/counter.cfg" --run-dir "$kind-3" --set groups.0.ranks=3
    expect_rc "3-ranks/$kind/exit" "$kind-3-run" 0
    expect_grep "3-ranks/$kind/loader-says" "$kind-3-run.out" "cannot be loaded: .*${why[$kind]}.*; marking it bad"
    expect_grep "3-ranks/$kind/fell-back" "$kind-3-run.out" "resuming after epoch 2 "
    expect_eq "3-ranks/$kind/result" "$(metric "$kind-3/metrics.jsonl" log result | awk '{print $NF}')" 145
}
for kind in "${!why[@]}"; do side damaged3 "$kind"; done
full=$(metric sfull/metrics.jsonl log result)
part() { # NP ROW: one row of w changed in the part that rank loads
    local np=$1 row=$2 t=part-$1-$2
    cp -r sref "$t"
    /usr/bin/python3 "$CAIRN_ROOT/regression/damage.py" "w_row$row" "$t/ckpt/ckpt-e000003.h5"
    mpi "$t-run" "$np" run "$JOBS/sharded.cfg" --run-dir "$t" --set groups.0.ranks="$np"
    expect_rc "parts/$np-ranks/row$row/exit" "$t-run" 0
    expect_grep "parts/$np-ranks/row$row/loader-says" "$t-run.out" "ckpt-e000003.h5 \(epoch 3 step 0\) cannot be loaded: .*/groups/store/w: checksum mismatch.*; marking it bad"
    expect_grep "parts/$np-ranks/row$row/fell-back" "$t-run.out" "resuming after epoch 2 "
    expect_eq "parts/$np-ranks/row$row/result" "$(metric "$t/metrics.jsonl" log result | awk '{print $NF}')" "$full"
}
for np in 2 3; do for row in 0 5 11; do side part "$np" "$row"; done; done
sides_done

# the same settings written in another order (the metadata checksum
# consistent): refused as a file of other settings, and the message says
# why rather than listing nothing
cp -r ref reordered
/usr/bin/python3 "$CAIRN_ROOT/regression/damage.py" settings_reordered reordered/ckpt/ckpt-e000003.h5
mpi reordered-run 2 run "$JOBS/counter.cfg" --run-dir reordered "${set_2[@]}"
expect_rc reordered/refused reordered-run 2
expect_grep reordered/says-why reordered-run.err "was written for other settings: the same settings, written differently"
