# Preemption without Slurm: CAIRN_FAULT=signal:SIG:RANK:EPOCH makes one
# rank send itself a signal after the first step of an epoch, as Slurm
# would.  All ranks stop at that step boundary, commit a mid-epoch
# checkpoint and exit 75; rerunning the command (even with another number
# of PS shards) ends exactly like an uninterrupted run.  The slurm
# scenario does the same through a real Slurm cluster.
. "$(dirname "$0")/../lib.sh"
enter
trap 'chattr -R -i "$T_WORK/$T_NAME" 2>/dev/null' EXIT
T_TIMEOUT=90
synth data 2 d.h5 3000 16 5 4 4
cp "$CAIRN_ROOT/regression/jobs/mlp.cfg" p.cfg
# 2700 training rows: 43 steps of 64 (the last one short) per epoch

mpi base 4 run p.cfg --run-dir base
expect_rc base/exit base 0
expect_eq batches/steps-per-epoch "$(metric base/metrics.jsonl epoch step)" "43 43 43"
expect_eq batches/samples-per-epoch "$(metric base/metrics.jsonl epoch samples)" "2700 2700 2700"
# the held-out rows are floor(H x N): 299 of 3000 for H = 0.0999, so 2701
# training rows, still 43 steps (the last one of 13 rows)
mpi floor 4 run p.cfg --run-dir floor --set data.holdout=0.0999 --set stop.max_epochs=1
expect_eq batches/holdout-rounds-down "$(metric floor/metrics.jsonl epoch step) $(metric floor/metrics.jsonl epoch samples)" "43 2701"
expect_grep batches/train-loss-logged floor.out "train_loss = [0-9.e+-]+"

# USR1 on a PS shard (rank 3) in epoch 2; resumed with 3 shards
CAIRN_FAULT=signal:USR1:3:2 mpi usr1 4 run p.cfg --run-dir u
expect_rc usr1/exit-75 usr1 75
expect_eq usr1/exit-status-file "$(cat u/exit_status)" 75
expect_grep usr1/message usr1.err "^cairn: preempted by signal USR1 in epoch 2 after step 1: checkpoint saved in u/ckpt; exit 75: rerun to continue$"
expect_count usr1/message-once usr1.err "^cairn: preempted" 1
expect_eq usr1/mid-epoch-checkpoint "$(ckpt_ls u/ckpt | tail -n 1 | cut -f1-3,5)" "1	1	ckpt-e000001-s000001.h5	ok"
run verify "$CAIRN" ckpt verify u/ckpt/ckpt-e000001-s000001.h5
expect_rc usr1/verifies verify 0
mpi usr1-rest 5 run p.cfg --run-dir u --set ps.shards=3
expect_rc usr1/resumed-exit usr1-rest 0
expect_grep usr1/resumed-at-step usr1-rest.out "resuming in epoch 2 after step 1 \(init skipped\)"
expect_grep usr1/rest-of-epoch usr1-rest.out "epoch 2 done in [0-9.]+ s \($((2700 - 64)) samples"
same_bytes usr1/same-model-bytes base/model.h5 u/model.h5

# a preemption whose checkpoint cannot be written (on_failure = "warn") says
# so, and the rerun repeats the work since the newest committed checkpoint
CAIRN_FAULT=signal:USR1:3:2 mpi ro1 4 run p.cfg --run-dir w
expect_rc unwritable/first-exit-75 ro1 75
if [ "$(id -u)" = 0 ]; then chattr +i w/ckpt; else chmod 555 w/ckpt; fi
CAIRN_FAULT=signal:USR1:0:3 mpi ro2 4 run p.cfg --run-dir w
if [ "$(id -u)" = 0 ]; then chattr -i w/ckpt; else chmod 755 w/ckpt; fi
expect_rc unwritable/exit-75 ro2 75
expect_grep unwritable/message ro2.err "^cairn: preempted by signal USR1 in epoch 3 after step 1: its checkpoint could not be written \(see the log\), so a rerun repeats the work since the newest committed checkpoint in w/ckpt \(or starts over if there is none\); exit 75: rerun to continue$"
expect_grep unwritable/warned ro2.out "warning: checkpoint in epoch 3 after step 1 failed: "
expect_count unwritable/not-claimed-saved ro2.err "checkpoint saved" 0
mpi ro3 4 run p.cfg --run-dir w
expect_rc unwritable/resumed-exit ro3 0
expect_grep unwritable/resumed-from-committed ro3.out "resuming in epoch 2 after step 1 \(init skipped\)"
same_bytes unwritable/same-model-bytes base/model.h5 w/model.h5

# preemptions during start-up commit nothing new, yet are no crash loop:
# with checkpoint.max_resumes = 1 two of them in a row still end in 75,
# and the third run finishes exactly like an uninterrupted one
cap=(--set checkpoint.max_resumes=1)
CAIRN_FAULT=signal:USR1:3:2 mpi su0 4 run p.cfg --run-dir su "${cap[@]}"
for i in 1 2; do CAIRN_FAULT=signal:USR1:0:0 mpi "su$i" 4 run p.cfg --run-dir su "${cap[@]}"; done
expect_eq startup/exits "$(cat su0.rc su1.rc su2.rc | xargs)" "75 75 75"
expect_grep startup/message su2.err "^cairn: preempted by signal USR1 in epoch 2 after step 1: checkpoint saved in su/ckpt; exit 75: rerun to continue$"
mpi su3 4 run p.cfg --run-dir su "${cap[@]}"
expect_rc startup/finishes su3 0
same_bytes startup/same-model-bytes base/model.h5 su/model.h5

# the job file's own signal list: USR2 only, on a trainer rank in epoch 3
CAIRN_FAULT=signal:USR2:0:3 mpi usr2 4 run p.cfg --run-dir u2 --set 'slurm.signals=["USR2"]'
expect_rc usr2/exit-75 usr2 75
expect_grep usr2/message usr2.err "^cairn: preempted by signal USR2 in epoch 3 after step 1: "
mpi usr2-rest 4 run p.cfg --run-dir u2 --set 'slurm.signals=["USR2"]'
expect_rc usr2/resumed-exit usr2-rest 0
same_bytes usr2/same-model-bytes base/model.h5 u2/model.h5

# a mid-epoch checkpoint cannot continue with fewer steps per epoch
CAIRN_FAULT=signal:TERM:1:2 mpi term 4 run p.cfg --run-dir t
expect_rc term/exit-75 term 75
mpi fewer 4 run p.cfg --run-dir t --set steps_per_epoch=1
expect_rc fewer-steps/exit fewer 2
expect_grep fewer-steps/message fewer.err "^cairn: the checkpoint was taken after step 1 of epoch 2, but epochs now have 1 step$"

# without checkpoints a signal keeps its usual effect: the rank dies
CAIRN_FAULT=signal:USR1:0:2 mpi nockpt 4 run p.cfg --run-dir n --set checkpoint.every=0
rc=$(cat nockpt.rc)
[ "$rc" != 0 ] && [ "$rc" != 75 ] && [ "$rc" != 124 ] && pass no-checkpoints/killed ||
    fail no-checkpoints/killed "exit $rc" nockpt.err
expect_count no-checkpoints/not-preempted nockpt.err "preempted" 0

# the generic reader's position is part of a mid-epoch checkpoint too
counter_data
mpi cbase 1 run "$JOBS/counter.cfg" --run-dir cb --set steps_per_epoch=3
CAIRN_FAULT=signal:USR1:0:2 mpi c1 1 run "$JOBS/counter.cfg" --run-dir c --set steps_per_epoch=3
expect_rc counter/exit-75 c1 75
mpi c2 1 run "$JOBS/counter.cfg" --run-dir c --set steps_per_epoch=3
expect_eq counter/totals "$(grep -o 'main/total = [0-9]*' c1.out c2.out | awk '{print $3}' | xargs)" \
    "$(grep -o 'main/total = [0-9]*' cbase.out | awk '{print $3}' | xargs)"
expect_eq counter/result "$(metric c/metrics.jsonl log result)" 145

# a bad CAIRN_FAULT signal is an input error
CAIRN_FAULT=signal:KILL:0 mpi badsig 1 run "$JOBS/counter.cfg" --run-dir bs
expect_rc bad-fault/exit badsig 2
expect_grep bad-fault/message badsig.err "CAIRN_FAULT='signal:KILL:0' is not"

# a signal after the last step: the job finishes, and says why it did not stop
counter_data
CAIRN_FAULT=signal:USR1:1:4 mpi late 2 run "$JOBS/counter.cfg" --run-dir late --set groups.0.ranks=2
expect_rc late/exit late 0
expect_eq late/exit-status-file "$(cat late/exit_status)" 0
expect_grep late/said-so late.out "signal USR1 came after the last step: the job finished instead of stopping"
expect_eq late/result "$(metric late/metrics.jsonl log result)" 145
