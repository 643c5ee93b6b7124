# Every job file in regression/bad/ is wrong in one way, stated in its
# header as "# expect: LINE: message" (and "# ranks: N" when the rank
# count matters).  `cairn check` and `cairn run` under mpirun must both
# exit 2 and print FILE:LINE: message; the run prints it once (rank 0).
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=60
n=0
for f in "$CAIRN_ROOT"/regression/bad/*.cfg; do
    name=$(basename "$f" .cfg)
    expect=$(sed -n 's/^# expect: //p' "$f" | head -n 1)
    line=${expect%%: *}
    text=${expect#*: }
    ranks=$(sed -n 's/^# ranks: //p' "$f")
    loc="$f:$line: "
    [ "$line" = 0 ] && loc="$f: "
    run "check-$name" "$CAIRN" check "$f" ${ranks:+--ranks "$ranks"}
    expect_rc "$name/check-exit" "check-$name" 2
    if grep -Fq -- "$loc$text" "check-$name.err"; then pass "$name/check-message"
    else fail "$name/check-message" "want '$loc$text'" "check-$name.err"; fi
    mpi "run-$name" "${ranks:-2}" run "$f" --run-dir "r-$name"
    expect_rc "$name/run-exit" "run-$name" 2
    c=$(grep -Fc -- "$loc$text" "run-$name.err")
    [ "$c" = 1 ] && pass "$name/run-message-once" ||
        fail "$name/run-message-once" "$c copies of '$loc$text'" "run-$name.err"
    n=$((n + 1))
done
[ "$n" -ge 25 ] && pass corpus-size || fail corpus-size "only $n bad job files"
