# A truncated, a byte-flipped and a deleted checkpoint are each detected,
# reported by name, marked bad, and the resume falls back to the newest
# earlier checkpoint that verifies, ending with the uninterrupted result.
. "$(dirname "$0")/../lib.sh"
enter
counter_data
set_2=(--set groups.0.ranks=2)
mpi ref 2 run "$JOBS/counter.cfg" --run-dir ref "${set_2[@]}" --set stop.max_epochs=3
expect_rc ref/exit ref 0

damage() { # kind dir: damage dir/ckpt/ckpt-e000003.h5
    local f=$2/ckpt/ckpt-e000003.h5
    case $1 in
    truncated) truncate -s 2000 "$f" ;;
    deleted) rm "$f" ;;
    flipped) # one byte of the total's data, found the way any HDF5 user would
        py '
import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    off = f["groups/main/total"].id.get_offset()
with open(sys.argv[1], "r+b") as g:
    g.seek(off); b = g.read(1); g.seek(off); g.write(bytes([b[0] ^ 0x10]))
' "$f" ;;
    esac
}

why_truncated="cannot open|truncated|eof"
why_flipped="/groups/main/total: checksum mismatch"
why_deleted="the file is missing"
for kind in truncated flipped deleted; do
    cp -r ref "$kind"
    damage $kind "$kind"
    if [ $kind != deleted ]; then
        run "$kind-verify" "$CAIRN" ckpt verify "$kind/ckpt/ckpt-e000003.h5"
        expect_rc "$kind/verify-fails" "$kind-verify" 1
    fi
    # resume on: falls back from epoch 3 to epoch 2, then runs epochs 3 and 4
    mpi "$kind-run" 2 run "$JOBS/counter.cfg" --run-dir "$kind" "${set_2[@]}"
    expect_rc "$kind/exit" "$kind-run" 0
    expect_grep "$kind/named" "$kind-run.out" "warning: checkpoint $kind/ckpt/ckpt-e000003.h5 \(epoch 3 step 0\) cannot be loaded: .*marking it bad"
    var=why_$kind
    expect_grep "$kind/reason" "$kind-run.out" "${!var}"
    expect_grep "$kind/fell-back" "$kind-run.out" "resuming after epoch 2 "
    expect_eq "$kind/result" "$(metric "$kind/metrics.jsonl" log result | awk '{print $NF}')" 145
    expect_eq "$kind/marked-bad" "$(metric "$kind/metrics.jsonl" ckpt_bad epoch)" 3
done

# Asked for explicitly, a damaged epoch is an error (exit 3) and is marked
# bad in the index, so a restart loop asking again gets a clear refusal.
cp -r ref exact
damage flipped exact
mpi exact1 2 run "$JOBS/counter.cfg" --run-dir exact "${set_2[@]}" --resume=3
expect_rc exact/damaged-exit exact1 3
expect_grep exact/damaged-message exact1.err "the checkpoint of epoch 3 \(ckpt-e000003.h5\) is damaged: .*checksum mismatch"
run exact-ls "$CAIRN" ckpt ls exact/ckpt
expect_eq exact/index-bad "$(grep ckpt-e000003 exact-ls.out | cut -f5)" bad
mpi exact2 2 run "$JOBS/counter.cfg" --run-dir exact "${set_2[@]}" --resume=3
expect_rc exact/again-refused exact2 2
expect_grep exact/again-message exact2.err "no such checkpoint: epoch 3 is marked bad"

# every checkpoint damaged: auto starts fresh (and says so), latest fails
cp -r ref all
for f in all/ckpt/ckpt-*.h5; do truncate -s 100 "$f"; done
mpi all-latest 2 run "$JOBS/counter.cfg" --run-dir all "${set_2[@]}" --resume=latest
expect_rc all/latest-fails all-latest 2
mpi all-auto 2 run "$JOBS/counter.cfg" --run-dir all "${set_2[@]}"
expect_rc all/auto-exit all-auto 0
expect_grep all/auto-fresh all-auto.out "no committed checkpoint in all/ckpt: starting fresh"
expect_eq all/result "$(metric all/metrics.jsonl log result | awk '{print $NF}')" 145

# an index that lists 50,000 newer checkpoints whose files are gone: all
# are marked bad with one index write (one write each was quadratic: a
# start-up never ended), and the run resumes the newest that is there
cp -r ref gone
awk 'BEGIN {for (e = 100; e < 50100; e++) printf "%d\t0\tckpt-e%06d.h5\t1000\tok\n", e, e}' >>gone/ckpt/index
mpi gone 2 run "$JOBS/counter.cfg" --run-dir gone "${set_2[@]}"
expect_rc many-missing/exit gone 0
expect_grep many-missing/resumed gone.out "resuming after epoch 3 "
expect_count many-missing/each-named gone.out "cannot be loaded: the file is missing; marking it bad" 50000
expect_eq many-missing/marked-bad "$(ckpt_ls gone/ckpt | awk '$5 == "bad"' | wc -l)" 50000
expect_eq many-missing/result "$(metric gone/metrics.jsonl log result | awk '{print $NF}')" 145

# a run that dies while loading leaves DIR/loading; after two such runs the
# third gives up on that checkpoint instead of dying on it forever
cp -r ref loop
printf 'ckpt-e000003.h5 2\n' >loop/ckpt/loading
mpi loop 2 run "$JOBS/counter.cfg" --run-dir loop "${set_2[@]}"
expect_rc crash-loop/exit loop 0
expect_grep crash-loop/named loop.out "ckpt-e000003.h5 \(epoch 3 step 0\) cannot be loaded: two earlier runs died while loading it"
expect_grep crash-loop/fell-back loop.out "resuming after epoch 2 "
[ ! -e loop/ckpt/loading ] && pass crash-loop/cleared || fail crash-loop/cleared "loading marker left behind"

# Parts of 16 MiB and more are checksummed on a thread beside their I/O,
# and loads go 64 MiB (8192 rows of 8 KiB here) at a time: a state of
# 25000 rows saves on 2 ranks and loads on 2 (slabs of 8192 and 4308
# rows each) and on 3 (8192 and 141 or 142: second slabs that start
# mid-part), every checksum agreeing; a byte flipped in row 9000, in the
# first slab of rank 1 of 3 (its rows 8334-16666), is found.  Two ranks
# are bound to a core each by mpirun, so they sum inline; three are not,
# and use the thread.
cat >big.cfg <<'CFG'
name = "big";
groups = ( { name = "state"; ranks = 2; } );
init = ( { group = "state"; steps = (
    { op = "fill"; out = "w"; shape = [25000, 1024]; dtype = "f64"; value = 1.5; dist = "sharded"; } ); } );
epoch = ( { group = "state"; steps = ( { op = "scale"; in = "w"; out = "w"; factor = 2.0; } ); } );
stop = { max_epochs = 1; };
CFG
mpi big 2 run big.cfg --run-dir big
expect_rc big/exit big 0
run big-verify "$CAIRN" ckpt verify big/ckpt/ckpt-e000001.h5
expect_rc big/verify big-verify 0
mv big/ckpt/ckpt-e000001.h5 big-e1.h5 # a resume from epoch 0 writes it anew
for np in 2 3; do
    mpi "big-$np" "$np" run big.cfg --run-dir big --resume=0 --set groups.0.ranks=$np
    expect_rc "big/resume-$np" "big-$np" 0
    expect_grep "big/loaded-$np" "big-$np.out" "resuming after epoch 0 "
    expect_eq "big/same-$np" "$(h5cmp big-e1.h5 big/ckpt/ckpt-e000001.h5 /groups/state/w)" same
done
rm big-e1.h5
py '
import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    off = f["groups/state/w"].id.get_offset()
with open(sys.argv[1], "r+b") as g:
    at = off + (9000 * 1024 + 5) * 8
    g.seek(at); b = g.read(1); g.seek(at); g.write(bytes([b[0] ^ 0x10]))
' big/ckpt/ckpt-e000001.h5
mpi big-bad 3 run big.cfg --run-dir big --resume=1 --set groups.0.ranks=3
expect_rc big/flipped-exit big-bad 3
expect_grep big/flipped-found big-bad.err "/groups/state/w: checksum mismatch"
rm -rf big
