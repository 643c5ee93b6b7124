# Resuming a sharded state on more and on fewer ranks; refusals that
# change nothing (other settings, per-rank state on another rank count).
. "$(dirname "$0")/../lib.sh"
enter
job=$JOBS/sharded.cfg

final_w() { h5val "$1/ckpt/ckpt-e000006.h5" groups/store/w | md5sum | cut -c1-12; }

mpi ref 3 run "$job" --run-dir ref
expect_rc ref/exit ref 0
want=$(metric ref/metrics.jsonl log result)
expect_eq ref/result "$want" 44640

for n in 4 2 1; do
    mpi "first$n" 3 run "$job" --run-dir "r$n" --set stop.max_epochs=3
    mpi "more$n" "$n" run "$job" --run-dir "r$n" --set groups.0.ranks=$n
    expect_rc "ranks3to$n/exit" "more$n" 0
    expect_grep "ranks3to$n/resumed" "more$n.out" "resuming after epoch 3 "
    expect_eq "ranks3to$n/result" "$(metric "r$n/metrics.jsonl" log result | awk '{print $NF}')" "$want"
    same_h5 "ranks3to$n/same-state" ref/ckpt/ckpt-e000006.h5 "r$n/ckpt/ckpt-e000006.h5" /groups/store/w
done

# other state-defining settings: refused, named, nothing changed
before=$(dir_sums ref/ckpt)
mpi shape 3 run "$job" --run-dir ref --set 'init.0.steps.0.shape=[10, 3]'
expect_rc settings/refused shape 2
expect_grep settings/named shape.err "was written for other settings: blob store/w: the checkpoint has f64\[12, 3\] sharded, this job f64\[10, 3\] sharded"
mpi seed 3 run "$job" --run-dir ref --set seed=4
expect_rc settings/seed-refused seed 2
expect_grep settings/seed-named seed.err "seed: the checkpoint has 3, this job 4"
expect_eq settings/nothing-changed "$(dir_sums ref/ckpt)" "$before"

# per-rank state is never redistributed: a clear refusal
cat >perrank.cfg <<'CFG'
name = "perrank";
groups = ( { name = "g"; ranks = 2; } );
init = ( { group = "g"; steps = ( { op = "fill"; out = "mine"; shape = [2]; dist = "per-rank"; } ); } );
epoch = ( { group = "g"; steps = ( { op = "scale"; in = "mine"; out = "mine"; factor = 2.0; } ); } );
stop = { max_epochs = 2; };
CFG
mpi pr 2 run perrank.cfg --run-dir pr
expect_rc per-rank/base pr 0
py 'import h5py,sys; d=h5py.File(sys.argv[1],"r")["groups/g/mine"]; assert d.shape == (2, 2) and d.attrs["dist"] == b"per-rank"' \
    pr/ckpt/ckpt-e000002.h5 && pass per-rank/stored-by-rank || fail per-rank/stored-by-rank "not [ranks, 2]"
mpi pr3 3 run perrank.cfg --run-dir pr --set groups.0.ranks=3 --set stop.max_epochs=3
expect_rc per-rank/refused pr3 2
expect_grep per-rank/rule pr3.err "it is per-rank state of 2 ranks and group g now has 3; per-rank state is never redistributed: resume with 2 ranks in group g"
