# A rank killed (SIGKILL) at each point of epoch 2's checkpoint write and
# commit.  The previous committed checkpoint stays the newest loadable one
# (epoch 2's own once its index entry is durable), nothing half-written is
# ever listed, the next commit removes the unfinished file, and the next
# run ends exactly like an uninterrupted one.
. "$(dirname "$0")/../lib.sh"
enter
counter_data
T_TIMEOUT=60
set_2=(--set groups.0.ranks=2)

# point rank resume-epoch
for spec in "write 1 1" "write 0 1" "before_rename 0 1" "after_rename 0 1" "index_tmp 0 1" "after_index 0 2"; do
    set -- $spec
    point=$1 rank=$2 from=$3 name=$1-rank$2
    CAIRN_FAULT=kill:$point:$rank:2 mpi "$name-crash" 2 run "$CAIRN_ROOT/jobs/counter.cfg" --run-dir "$name" "${set_2[@]}"
    rc=$(cat "$name-crash.rc")
    [ "$rc" != 0 ] && [ "$rc" != 124 ] && pass "$name/killed" || fail "$name/killed" "exit $rc" "$name-crash.err"
    expect_grep "$name/at-point" "$name-crash.err" "CAIRN_FAULT kills this rank at $point"
    run "$name-ls" "$CAIRN" ckpt ls "$name/ckpt"
    expect_eq "$name/newest-committed" "$(tail -n 1 "$name-ls.out" | cut -f1,5)" "$from	ok"
    listed=$(cut -f3 "$name-ls.out" | grep -c tmp)
    expect_eq "$name/no-tmp-listed" "$listed" 0
    case $point in write | before_rename) # the killed save left its file behind
        expect_eq "$name/unfinished-left" "$(ls "$name/ckpt" | grep -c '\.h5\.tmp$')" 1 ;;
    esac
    for f in $(cut -f3 "$name-ls.out"); do
        run "$name-verify" "$CAIRN" ckpt verify "$name/ckpt/$f"
        [ "$(cat "$name-verify.rc")" = 0 ] || fail "$name/listed-verify" "$f does not verify"
    done
    mpi "$name-resume" 2 run "$CAIRN_ROOT/jobs/counter.cfg" --run-dir "$name" "${set_2[@]}"
    expect_rc "$name/resume-exit" "$name-resume" 0
    expect_grep "$name/resumed-from" "$name-resume.out" "resuming after epoch $from "
    expect_eq "$name/result" "$(metric "$name/metrics.jsonl" log result)" 145
    expect_eq "$name/unfinished-removed" "$(ls "$name/ckpt" | grep -c '\.tmp$')" 0
    # the epochs after the resume point add up as in the uninterrupted run
    expect_eq "$name/totals" "$(grep -o 'main/total = [0-9]*' "$name-resume.out" | awk '{print $3}' | xargs)" \
        "$( [ "$from" = 1 ] && echo 115 136 145 || echo 136 145)"
done
