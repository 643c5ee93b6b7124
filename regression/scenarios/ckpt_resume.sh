# Checkpoints of the counter job: one per committed epoch, each holding
# the state after that epoch; a resume from any of them ends like the
# uninterrupted run; the resume modes; an independent reader.
. "$(dirname "$0")/../lib.sh"
enter
counter_data
set_2=(--set groups.0.ranks=2)

mpi ref 2 run "$JOBS/counter.cfg" --run-dir ref "${set_2[@]}"
expect_rc ref/exit ref 0
run ls "$CAIRN" ckpt ls ref/ckpt
expect_eq ref/committed "$(cut -f1,2,3,5 ls.out | tr '\t\n' ' ')" \
    "0 0 ckpt-e000000.h5 ok 1 0 ckpt-e000001.h5 ok 2 0 ckpt-e000002.h5 ok 3 0 ckpt-e000003.h5 ok 4 0 ckpt-e000004.h5 ok "
[ -z "$(ls ref/ckpt | grep -v -e '^ckpt-e00000[0-4].h5$' -e '^index$')" ] &&
    pass ref/no-stray-files || fail ref/no-stray-files "$(ls ref/ckpt | tr '\n' ' ')"

# loading epoch e's checkpoint yields the total after epoch e
totals=(100 103 115 136 145)
for e in 0 1 2 3 4; do
    run "x$e" "$CAIRN" ckpt extract ref/ckpt --epoch $e --blob main/total -o "t$e.h5"
    expect_eq "extract/epoch$e" "$(h5val "t$e.h5" main/total)" "${totals[$e]}"
done
run x7 "$CAIRN" ckpt extract ref/ckpt --epoch 7 --blob main/total -o t7.h5
expect_rc extract/never-committed x7 2
expect_grep extract/never-committed-message x7.err "no such checkpoint: epoch 7 in ref/ckpt \(committed: 0 1 2 3 4\)"
# two blobs after one --blob: the message says each needs its own
run x2 "$CAIRN" ckpt extract ref/ckpt --blob main/total main/cursor -o t2.h5
expect_rc extract/one-flag-two-blobs x2 2
expect_grep extract/each-needs-its-own x2.err "unexpected argument 'main/cursor': each blob needs its own --blob"
run x3 "$CAIRN" ckpt extract ref/ckpt --blob main/total --blob main/cursor -o t3.h5
expect_rc extract/two-blobs x3 0
expect_eq extract/two-blobs-value "$(h5val t3.h5 main/cursor)" 10

# a resume from every committed epoch ends with the uninterrupted result
want=(103 115 136 145)
for e in 0 1 2 3 4; do
    cp -r ref "r$e"
    mpi "res$e" 2 run "$JOBS/counter.cfg" --run-dir "r$e" "${set_2[@]}" --resume=$e
    expect_rc "resume$e/exit" "res$e" 0
    expect_grep "resume$e/from" "res$e.out" "resuming after epoch $e"
    expect_eq "resume$e/result" "$(metric "r$e/metrics.jsonl" log result | awk '{print $NF}')" 145
    expect_eq "resume$e/epochs-this-run" "$(metric "r$e/metrics.jsonl" done this_run | awk '{print $NF}')" $((4 - e))
    expect_eq "resume$e/totals" "$(grep -o 'main/total = [0-9]*' "res$e.out" | awk '{print $3}' | xargs)" \
        "$(echo "${want[@]:$e}")"
    same_bytes "resume$e/checkpoint-same-bytes" ref/ckpt/ckpt-e000004.h5 "r$e/ckpt/ckpt-e000004.h5"
done

# replicated state resumes on any number of ranks: 1 rank from epoch 1
cp -r ref one
mpi one 1 run "$JOBS/counter.cfg" --run-dir one --resume=1
expect_rc resume-1-rank/exit one 0
expect_eq resume-1-rank/result "$(metric one/metrics.jsonl log result | awk '{print $NF}')" 145

# resume modes
cp -r ref m
mpi never 2 run "$JOBS/counter.cfg" --run-dir m "${set_2[@]}" --resume=7
expect_rc mode/never-committed never 2
expect_count mode/never-committed-message never.err "no such checkpoint: epoch 7 was never committed in m/ckpt" 1
mpi latest-none 1 run "$JOBS/counter.cfg" --run-dir empty --resume=latest
expect_rc mode/latest-without-checkpoints latest-none 2
expect_grep mode/latest-message latest-none.err "no usable committed checkpoint in empty/ckpt"
mpi auto-none 1 run "$JOBS/counter.cfg" --run-dir fresh
expect_rc mode/auto-fresh auto-none 0
expect_grep mode/auto-fresh-message auto-none.out "no committed checkpoint in fresh/ckpt: starting fresh"
before=$(dir_sums m/ckpt)
mpi none 2 run "$JOBS/counter.cfg" --run-dir m "${set_2[@]}" --resume=none
expect_rc mode/none-refused none 2
expect_grep mode/none-message none.err "m/ckpt already holds checkpoints \(newest: epoch 4\)"
expect_eq mode/none-changed-nothing "$(dir_sums m/ckpt)" "$before"
# the refusal is the run directory's latest word, like any failure
expect_grep mode/none-logged m/cairn.log "error: .*m/ckpt already holds checkpoints \(newest: epoch 4\)"
expect_grep mode/none-exit-status m/exit_status "^2 input: .*m/ckpt already holds checkpoints"
mpi force 2 run "$JOBS/counter.cfg" --run-dir m "${set_2[@]}" --resume=none --force
expect_rc mode/force force 0
expect_grep mode/force-message force.out "--force: deleted 5 checkpoints in m/ckpt"
expect_eq mode/force-fresh "$(metric m/metrics.jsonl done this_run | awk '{print $NF}')" 4
run badmode "$CAIRN" run "$JOBS/counter.cfg" --resume=sometime
expect_rc mode/bad-value badmode 2
run forceonly "$CAIRN" run "$JOBS/counter.cfg" --force
expect_rc mode/force-needs-none forceonly 2

# statistics of every save and load, in the log and the metrics
expect_grep stats/log ref.out "checkpoint saved: epoch 4 step 0 \(ckpt-e000004.h5\): [0-9.]+ kB in [0-9.]+ s = [0-9.]+ GB/s; per rank [0-9.]+/[0-9.]+/[0-9.]+ s \(min/median/max\), slowest rank [01]"
expect_grep stats/load-log res2.out "checkpoint loaded: epoch 2 step 0"
py '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
saves = [r for r in rows if r["kind"] == "ckpt_save"]
assert [r["epoch"] for r in saves] == [0, 1, 2, 3, 4], saves
for r in saves:
    assert r["bytes"] == 16, r  # two i64 scalars
    assert r["rank_min"] <= r["rank_median"] <= r["rank_max"], r
    assert r["slowest_rank"] in (0, 1) and r["gbps"] >= 0, r
' ref/metrics.jsonl && pass stats/metrics || fail stats/metrics "bad ckpt_save rows"

# an independent reader finds the documented layout
py '
import h5py, sys
f = h5py.File(sys.argv[1], "r")
a = f.attrs
assert a["format_version"] == 2 and a["epoch"] == 3 and a["step"] == 0 and a["done"] == 0
assert a["job_name"] == b"counter" and a["seed"] == 1 and a["world_size"] == 2
assert a["checksum_alg"] == b"cairn-mix64-v2" and len(a["digest"]) == 16
assert b"blob main/total=i64[] replicated" in a["settings"]
assert f["groups/main"].attrs["ranks"] == 2
assert f["groups/main/total"][()] == 136 and f["groups/main/cursor"][()] == 9
assert f["groups/main/total"].attrs["dist"] == b"replicated"
# the checksum of a dataset is its data sum plus FNV-1a of its name
M = 2**64
def fnv(s):
    h = 0xcbf29ce484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001b3) % M
    return h
def mix(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) % M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) % M
    return z ^ (z >> 31)
assert f["groups/main/total"].attrs["checksum"] == (mix(136) + fnv("main/total")) % M
meta = "format=2\nepoch=3\nstep=0\ndone=0\nseed=1\nworld_size=2\ngroup main ranks=2\n" + a["settings"].decode()
assert a["meta_checksum"] == b"%016x" % fnv(meta), (a["meta_checksum"], "%016x" % fnv(meta))
' ref/ckpt/ckpt-e000003.h5 && pass h5py/layout || fail h5py/layout "h5py did not find the documented layout"
run dump h5dump -d /groups/main/total ref/ckpt/ckpt-e000003.h5
expect_grep h5dump/value dump.out "\(0\): 136"
run verify "$CAIRN" ckpt verify ref/ckpt/ckpt-e000003.h5
expect_rc verify/good verify 0
expect_grep verify/lines verify.out "^ok	/groups/main/total$"
