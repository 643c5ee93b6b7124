# The command line: --help everywhere, usage errors exit 2, and `cairn
# print` / `cairn check` on every example job in jobs/.
. "$(dirname "$0")/../lib.sh"
enter
for cmd in "" run print check data ckpt grads bench; do
    run "help-$cmd" "$CAIRN" $cmd --help
    expect_rc "help/${cmd:-main}" "help-$cmd" 0
    expect_grep "help/${cmd:-main}/usage" "help-$cmd.out" "^usage: cairn"
done
run none "$CAIRN"
expect_rc usage/no-command none 2
run bogus "$CAIRN" frobnicate
expect_rc usage/unknown-command bogus 2
expect_grep usage/unknown-command-message bogus.err "unknown command 'frobnicate'"
run nojob "$CAIRN" check
expect_rc usage/missing-job nojob 2
run badopt "$CAIRN" print "$JOBS/counter.cfg" --frob
expect_rc usage/unknown-option badopt 2
run badranks "$CAIRN" check "$JOBS/counter.cfg" --ranks zero
expect_rc usage/bad-ranks badranks 2
run missing "$CAIRN" check no-such-job.cfg
expect_rc usage/unreadable-job missing 2
expect_grep usage/unreadable-job-message missing.err "no-such-job.cfg: cannot read job file"
run version "$CAIRN" --version
expect_grep version version.out "^cairn [0-9]+\.[0-9]+\.[0-9]+$"

for f in "$JOBS"/*.cfg; do
    j=$(basename "$f" .cfg)
    run "print-$j" "$CAIRN" print "$f"
    expect_rc "print/$j" "print-$j" 0
    run "check-$j" "$CAIRN" check "$f"
    expect_rc "check/$j" "check-$j" 0
    expect_grep "check/$j/summary" "check-$j.out" ": ok: "
done

# the printed plan: groups with ranks, one op per line, with-blocks
p=print-tour.out
expect_grep print/groups $p "^  workers: ranks 0-1$"
expect_grep print/task $p "^  task work on workers \(ranks 0-1\):$"
expect_grep print/report $p "^    with report\(every_ms=20\):$"
expect_grep print/loop $p "^    with loop\(until=done\):$"
expect_grep print/parallel $p "^      with parallel\(\):$"
expect_grep print/op-args $p "^          b = broadcast\(b, root=1\)$"
expect_grep print/stop $p "^  max_epochs = 2$"
# a model job: its layers, tables and memory (the training extension's lines)
p=print-ctr.out
expect_grep print/model $p "^model: 13 inputs \+ 32 from tables -> 128 relu -> 64 relu -> 2 identity; softmax_cross_entropy, f32$"
expect_grep print/table $p "^  table user: 1000000 x 16, the sum of ids 'user'; up to 500000 rows on each of 2 shards$"
expect_grep print/memory $p "^  memory: up to 0\.2 MiB per stage rank, 100\.8 MiB per PS shard"
run print-counter-4 "$CAIRN" print "$JOBS/counter.cfg" --ranks 4
expect_grep print/spare print-counter-4.out "spare: ranks 1-3 idle"
expect_grep print/read print-counter-4.out \
    'batch, finished = read\(cursor, file="counter.h5", dataset="values", limit=3, dtype=i64\)'
run check-counter-4 "$CAIRN" check "$JOBS/counter.cfg" --ranks 4
expect_rc check/spare-ok check-counter-4 0
expect_grep check/spare-warning check-counter-4.err "warning: 4 ranks given but the groups use 1"

# the placement on nodes of K ranks each, and a flexible layout
run print-nodes "$CAIRN" print "$JOBS/demo.cfg" --ranks 7 --ranks-per-node 3 --set 'ps.shards=[1, 4]'
expect_rc print-nodes/exit print-nodes 0
expect_grep print-nodes/title print-nodes.out "^placement: 3 nodes of 3 ranks, filled in turn$"
expect_grep print-nodes/node1 print-nodes.out "^  node1: ranks 0-2 \(stage0, stage1, ps\)$"
expect_grep print-nodes/node2 print-nodes.out "^  node2: ranks 3-5 \(ps\)$"
expect_grep print-nodes/node3 print-nodes.out "^  node3: rank 6 \(spare\)$"
run print-nodes0 "$CAIRN" print "$JOBS/demo.cfg" --ranks-per-node 0
expect_rc print-nodes/zero print-nodes0 2
expect_grep print-nodes/zero-said print-nodes0.err "--ranks-per-node needs a positive integer, not '0'"
run check-nodes "$CAIRN" check "$JOBS/demo.cfg" --ranks-per-node 2
expect_rc check-nodes/print-only check-nodes 2
run print-few "$CAIRN" print "$JOBS/demo.cfg" --ranks 3 --set 'ps.shards=[2, 4]'
expect_rc print-few/exit print-few 2
expect_count print-few/one-line print-few.err "." 1
expect_grep print-few/named print-few.err "the job needs 4 ranks \(stage0: 1, stage1: 1, ps: 2\) but was given 3"

# --set on print and check
run set-print "$CAIRN" print "$JOBS/counter.cfg" --set groups.0.ranks=3
expect_grep set/print set-print.out "^  main: ranks 0-2$"
run set-bad "$CAIRN" check "$JOBS/counter.cfg" --set stop.max_epoch=3
expect_rc set/unknown-key set-bad 2
expect_grep set/unknown-key-message set-bad.err "^--set stop.max_epoch=3: unknown key 'max_epoch' in stop"

# the manual pages render cleanly and document every op and command
for page in cairn.1 cairn-job.5; do
    run "man-$page" groff -man -Tutf8 -ww "$CAIRN_ROOT/doc/$page"
    expect_rc "man/$page/renders" "man-$page" 0
    [ ! -s "man-$page.err" ] && pass "man/$page/no-warnings" || fail "man/$page/no-warnings" "groff warned" "man-$page.err"
done
run ops "$CAIRN" ops
for op in $(sed -n 's/^\([a-z_]*\): .*/\1/p' ops.out); do
    grep -Eq "^\.(B|BR) ($op|$op,|.*[ ,]$op[ ,]?)" "$CAIRN_ROOT/doc/cairn-job.5" &&
        pass "man/op-$op" || fail "man/op-$op" "op $op is not documented in cairn-job.5"
done
for cmd in run print check "data range" "data synth" ops "ckpt ls" "ckpt verify" "ckpt extract" grads "bench sgemm"; do
    grep -q "^\.B ${cmd}\$\|^\.B cairn ${cmd}" "$CAIRN_ROOT/doc/cairn.1" &&
        pass "man/command-${cmd// /-}" || fail "man/command-${cmd// /-}" "cairn.1 lacks $cmd"
done
# ... and every option of cairn run
for opt in $(grep -o -- '--[a-z][a-z-]*' help-run.out | sort -u); do
    grep -q -- "${opt//-/\\\\-}" "$CAIRN_ROOT/doc/cairn.1" &&
        pass "man/run-option$opt" || fail "man/run-option$opt" "cairn.1 lacks $opt"
done
