# A checkpoint directory that cannot be made or written: with
# on_failure = "warn" every epoch still runs (with a warning per failed
# checkpoint); with "abort" the job stops with exit 3.  Either way the
# committed checkpoints already there stay intact.
. "$(dirname "$0")/../lib.sh"
enter
counter_data
set_2=(--set groups.0.ranks=2)
trap 'chattr -R -i "$T_WORK/$T_NAME" 2>/dev/null' EXIT

# missing: the directory cannot be created (its parent is a regular file)
touch notadir
mpi miss-warn 2 run "$JOBS/counter.cfg" --run-dir mw "${set_2[@]}" --set checkpoint.dir=notadir/ckpt
expect_rc missing/warn-exit miss-warn 0
expect_count missing/warn-each miss-warn.out "warning: checkpoint after epoch [0-4] failed: cannot create directory notadir" 5
expect_eq missing/warn-all-epochs "$(metric mw/metrics.jsonl log total)" "103 115 136 145"
mpi miss-abort 2 run "$JOBS/counter.cfg" --run-dir ma "${set_2[@]}" --set checkpoint.dir=notadir/ckpt \
    --set checkpoint.on_failure=abort
expect_rc missing/abort-exit miss-abort 3
expect_grep missing/abort-message miss-abort.err 'checkpoint after epoch 0 failed \(checkpoint.on_failure = "abort"\): cannot create directory'
expect_eq missing/abort-stops "$(metric ma/metrics.jsonl log total)" ""

# unwritable: committed checkpoints of epochs 0-2 exist, then the directory
# becomes immutable (writes fail even for root)
mpi base 2 run "$JOBS/counter.cfg" --run-dir u "${set_2[@]}" --set stop.max_epochs=2
expect_rc unwritable/base base 0
if [ "$(id -u)" = 0 ]; then chattr +i u/ckpt; else chmod 555 u/ckpt; fi
before=$(dir_sums u/ckpt)
mpi unw-warn 2 run "$JOBS/counter.cfg" --run-dir u "${set_2[@]}"
expect_rc unwritable/warn-exit unw-warn 0
expect_grep unwritable/warn-resumed unw-warn.out "resuming after epoch 2 "
expect_count unwritable/warn-each unw-warn.out "warning: checkpoint after epoch [34] failed: cannot create u/ckpt/ckpt-e00000[34].h5.tmp: (Operation not permitted|Permission denied)" 2
expect_eq unwritable/warn-epochs "$(grep -o 'main/total = [0-9]*' unw-warn.out | awk '{print $3}' | xargs)" "136 145"
mpi unw-abort 2 run "$JOBS/counter.cfg" --run-dir u "${set_2[@]}" --set checkpoint.on_failure=abort
expect_rc unwritable/abort-exit unw-abort 3
expect_grep unwritable/abort-message unw-abort.err "checkpoint after epoch 3 failed"
expect_eq unwritable/committed-untouched "$(dir_sums u/ckpt)" "$before"
for f in u/ckpt/ckpt-*.h5; do
    run verify "$CAIRN" ckpt verify "$f"
    expect_rc "unwritable/verifies-$(basename "$f")" verify 0
done
if [ "$(id -u)" = 0 ]; then chattr -i u/ckpt; else chmod 755 u/ckpt; fi

# checkpoint.every = 2: epochs 2 and 4 (the last) and epoch 0 are saved
mpi every 1 run "$JOBS/counter.cfg" --run-dir ev --set checkpoint.every=2
expect_eq every/epochs "$(ckpt_ls ev/ckpt | cut -f1 | xargs)" "0 2 4"
# checkpoint.every = 0: none, and the job runs as usual
mpi never 1 run "$JOBS/counter.cfg" --run-dir nv --set checkpoint.every=0
expect_rc never/exit never 0
expect_eq never/totals "$(metric nv/metrics.jsonl log total)" "103 115 136 145"
[ ! -e nv/ckpt ] && pass never/none || fail never/none "nv/ckpt exists"
