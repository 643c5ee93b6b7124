# Training input errors (data of the wrong shape or content) exit 2 with a
# message naming the dataset, from rank 0 only, before anything runs; a NaN
# loss with on_nan = "abort" stops every rank promptly, naming the stage.
# check: quiet (watchdog timeouts of a few seconds)
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=60
synth data 2 d.h5 512 8 4 2
cat >t.cfg <<'CFG'
name = "t";
model = { inputs = 8; layers = ( { units = 16; activation = "relu"; }, { units = 4; } ); };
data = { file = "d.h5"; batch = 32; holdout = 0.25; };
pipeline = { stages = 2; chunks = 2; };
ps = { shards = 1; };
stop = { max_epochs = 2; };
CFG
mpi ok 3 run t.cfg --run-dir ok
expect_rc baseline/exit ok 0

# features narrower than model.inputs
mpi wide 3 run t.cfg --run-dir wide --set model.inputs=9
expect_rc data/width-exit wide 2
expect_count data/width-message wide.err "t.cfg:3: data: dataset 'features' in d.h5 is \[512, 8\]; the model takes \[N, 9\]" 1
# labels of another length, class out of range, a missing dataset, a missing file
py 'import h5py, numpy as np
with h5py.File("short.h5", "w") as f:
    f["features"] = np.zeros((512, 8), np.float32); f["labels"] = np.zeros(500, np.int32)
with h5py.File("range.h5", "w") as f:
    f["features"] = np.zeros((512, 8), np.float32); f["labels"] = np.full(512, 7, np.int32)
with h5py.File("nan.h5", "w") as f:
    x = np.ones((512, 8), np.float32); x[:, 3] = np.nan
    f["features"] = x; f["labels"] = np.zeros(512, np.int32)'
mpi short 3 run t.cfg --run-dir short --set data.file=short.h5
expect_rc data/rows-exit short 2
expect_grep data/rows-message short.err "dataset 'labels' in short.h5 has 500 rows but 'features' has 512"
mpi range 3 run t.cfg --run-dir range --set data.file=range.h5
expect_rc data/class-exit range 2
expect_grep data/class-message range.err "dataset 'labels' in range.h5 holds class 7, but the model has 4 outputs"
mpi noset 3 run t.cfg --run-dir noset --set data.labels=targets
expect_rc data/dataset-exit noset 2
expect_grep data/dataset-message noset.err "t.cfg:3: data: file 'd.h5' has no dataset 'targets'"
mpi nofile 3 run t.cfg --run-dir nofile --set data.file=none.h5
expect_rc data/file-exit nofile 2
expect_grep data/file-message nofile.err "cannot open HDF5 file 'none.h5'"

# NaN features: the loss is NaN at the first step; every rank stops at once
mpi nan 3 run t.cfg --run-dir nan --set data.file=nan.h5
expect_rc nan/exit nan 3
expect_grep nan/stage-named nan.err "epoch 1 step 1: task 'train1' \(group stage1\): op 'train_step' .*the training loss is NaN in pipeline stage 1 \(replica 0\); on_nan = \"abort\""
mpi nan-ignore 3 run t.cfg --run-dir nani --set data.file=nan.h5 --set on_nan=ignore
expect_rc nan/ignore-runs-on nan-ignore 0

# debug.grads is checked at the door: empty at check time, uncreatable
# before the first step (it used to fail after step 1 with no file named)
run grads-empty "$CAIRN" check t.cfg --set 'debug.grads=""'
expect_rc debug-grads/empty-exit grads-empty 2
expect_grep debug-grads/empty-message grads-empty.err "^--set debug.grads=\"\": debug.grads must name a file"
mpi grads-dir 3 run t.cfg --run-dir grads-dir --set 'debug.grads="no/such/dir/g.h5"'
expect_rc debug-grads/uncreatable-exit grads-dir 2
expect_grep debug-grads/uncreatable-message grads-dir.err "debug.grads: cannot create no/such/dir/g.h5: No such file or directory"
expect_count debug-grads/no-step-ran grads-dir/cairn.log "epoch 1 " 0
mpi grads-ok 3 run t.cfg --run-dir grads-ok --set 'debug.grads="g.h5"' --set stop.max_epochs=1
expect_rc debug-grads/ok-exit grads-ok 0
expect_eq debug-grads/written "$(py 'import h5py; print(sorted(h5py.File("g.h5", "r")["grads"]))')" "['L0', 'L1']"

# The watchdog in a model job: rank 1 (stage 1) never ends its train_step
# in epoch 2 (CAIRN_FAULT busy).  Stage 0 and the shard wait in their own
# model ops of the same step (train_step, ps_step): they are in the same
# work, so the message blames none of them and says the step is stuck.
CAIRN_FAULT=busy:train_step:1:2 mpi wd-train 3 run t.cfg --run-dir wd-train --set watchdog.timeout=3
expect_rc watchdog/train-exit wd-train 3
expect_grep watchdog/train-same-step wd-train/exit_status "^3 stalled: rank [02] \([^)]+\): watchdog: no progress for 3 s .* in epoch 2 step 1: task '[^']+' \(group (stage0|ps)\): op '(train_step|ps_step)' .*; the 2 other ranks it waits for are all in this work too, so none is late or lost: the work itself is stuck or slower than the timeout: ending the job$"
