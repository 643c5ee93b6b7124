# Every job file in regression/bad/ is wrong in one way, stated in its
# header as "# expect: LINE: message" (and "# ranks: N" when the rank
# count matters).  `cairn check` and `cairn run` under mpirun must both
# exit 2 and print FILE:LINE: message; the run prints it once (rank 0).
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=60
# one_bad FILE: check and run refuse it as its header says
one_bad() {
    local f=$1 name expect line text ranks loc c
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
    [ -n "${T_SANITIZED:-}" ] && return # the front end is check's; spare the slow launches
    mpi "run-$name" "${ranks:-2}" run "$f" --run-dir "r-$name"
    expect_rc "$name/run-exit" "run-$name" 2
    c=$(grep -Fc -- "$loc$text" "run-$name.err")
    [ "$c" = 1 ] && pass "$name/run-message-once" ||
        fail "$name/run-message-once" "$c copies of '$loc$text'" "run-$name.err"
}
n=0
for f in "$CAIRN_ROOT"/regression/bad/*.cfg; do
    side one_bad "$f"
    n=$((n + 1))
done
sides_done
[ "$n" -ge 25 ] && pass corpus-size || fail corpus-size "only $n bad job files"

# generated: limits on the text, and --set problems named as --set
enter limits
python3 -c 'print("#" + "x" * 20000)' >long_line.cfg
cat "$JOBS/counter.cfg" >>long_line.cfg
run long-line "$CAIRN" check long_line.cfg
expect_rc long-line/exit long-line 2
expect_grep long-line/message long-line.err "^long_line.cfg:1: line of 20001 bytes; job file lines are limited to 16384"
python3 -c 'print(("# filler\n" * 140000), end="")' >big.cfg
run big "$CAIRN" check big.cfg
expect_rc big/exit big 2
expect_grep big/message big.err "^big.cfg: job file of 1260000 bytes; job files are limited to 1048576"
printf 'name = "n";\nseed = 1;\n# a comment\0\n' >nul.cfg
run nul "$CAIRN" check nul.cfg
expect_rc nul/exit nul 2
expect_grep nul/line nul.err "^nul.cfg:3: a NUL byte \(a job file is text\)"
mkfifo fifo.cfg
run fifo "$CAIRN" check fifo.cfg
expect_rc fifo/exit fifo 2
expect_grep fifo/message fifo.err "fifo.cfg: cannot read job file: not a regular file"
run set-unknown "$CAIRN" check "$JOBS/counter.cfg" --set foo.bar=1
expect_rc set-unknown/exit set-unknown 2
expect_grep set-unknown/named "set-unknown.err" "^--set foo.bar=1: unknown key 'foo'"
run set-two "$CAIRN" check "$JOBS/counter.cfg" --set 'groups.0.ranks=1;x=2'
expect_rc set-two/exit set-two 2
expect_grep set-two/named "set-two.err" "^--set groups.0.ranks=1;x=2: the value must be one value, not several settings"
run set-wrap "$CAIRN" check "$JOBS/counter.cfg" --set seed=4294967296
expect_rc set-wrap/exit set-wrap 2
expect_grep set-wrap/named "set-wrap.err" "^--set seed=4294967296: integer 4294967296 needs an L suffix"
run set-long "$CAIRN" check "$JOBS/counter.cfg" --set seed=4294967296L
expect_rc set-long/exit set-long 0
run set-path "$CAIRN" check "$JOBS/counter.cfg" --set checkpoint.dir=runs/4294967296
expect_rc set-path/bare-string-ok set-path 0
printf 'seed = 1;\ngroups = ( { name = "g"; ranks = 1; } );\n' >noname.cfg
run set-innocent "$CAIRN" check noname.cfg --set seed=2
expect_grep set-innocent/blames-the-file set-innocent.err "^noname.cfg:1: missing key 'name'"
# the same under mpirun: rank 0 never opens the FIFO or reads the big file
mpi run-fifo 2 run fifo.cfg
expect_rc run-fifo/exit run-fifo 2
expect_grep run-fifo/message run-fifo.err "fifo.cfg: cannot read job file: not a regular file"
mpi run-big 2 run big.cfg
expect_rc run-big/exit run-big 2
expect_grep run-big/message run-big.err "big.cfg: job file of 1260000 bytes; job files are limited to 1048576"
# one problem, one message, with the value the user gave (no follow-on
# complaint about balance measured against a stand-in stage count)
for v in 5 0; do
    run "stages-$v" "$CAIRN" check "$JOBS/demo.cfg" --set "pipeline.stages=$v"
    expect_rc "stages-$v/exit" "stages-$v" 2
    expect_count "stages-$v/one-message" "stages-$v.err" . 1
done
expect_grep stages-5/says-5 stages-5.err "^--set pipeline.stages=5: pipeline.stages = 5 but the model has 4 layers"
expect_grep stages-0/says-0 stages-0.err "^--set pipeline.stages=0: 'stages' must be in 1..65536, got 0"
# too few ranks for a model job: said at the setting that decides the count
run ranks-stages "$CAIRN" check "$JOBS/demo.cfg" --ranks 4 --set pipeline.stages=3 --set 'pipeline.balance=[2,1,1]'
expect_grep ranks/at-the-set ranks-stages.err "^--set pipeline.stages=3: the job needs 5 ranks \(stage0: 1, stage1: 1, stage2: 1, ps: 2\) but was given 4"
run ranks-demo "$CAIRN" check "$JOBS/demo.cfg" --ranks 3
expect_grep ranks/at-pipeline ranks-demo.err "demo.cfg:$(grep -n '^pipeline' "$JOBS/demo.cfg" | cut -d: -f1): the job needs 4 ranks"

# strings from a job file reach the terminal escaped (cairn_escape): an
# escape sequence, a control byte and a byte that is not UTF-8 as \xNN
printf 'name = "esc";\nmodel = { inputs = 4; layers = ( { units = 4; activation = "\033[31mred\001\377"; }, { units = 2; } ); };\ndata = { file = "x.h5"; };\nstop = { max_epochs = 1; };\n' >esc.cfg
no_raw() { # NAME FILE: no ESC, \001 or \377 byte in FILE
    if LC_ALL=C grep -q $'[\x1b\x01\xff]' "$2"; then fail "$1" "raw control or non-UTF-8 bytes in $2" "$2"; else pass "$1"; fi
}
run esc "$CAIRN" check esc.cfg
expect_rc escape/check-exit esc 2
expect_grep escape/check-message esc.err '^esc.cfg:2: activation must be one of .*, not "\\x1b\[31mred\\x01\\xff"$'
no_raw escape/check-no-raw-bytes esc.err
mpi run-esc 2 run esc.cfg --run-dir r-esc
expect_rc escape/run-exit run-esc 2
expect_grep escape/run-message run-esc.err 'not "\\x1b\[31mred\\x01\\xff"'
no_raw escape/run-no-raw-bytes run-esc.err
