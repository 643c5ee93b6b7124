# Helpers for scenario scripts.  Each scenario runs in its own directory
# under build/regression/, runs real cairn processes with a timeout, and
# reports each check as one TAP line: "ok - NAME" or "not ok - NAME: why".
set -u
: "${CAIRN_ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${CAIRN:=$CAIRN_ROOT/build/cairn}"
: "${T_WORK:=$CAIRN_ROOT/build/regression}"
JOBS=$CAIRN_ROOT/jobs
# Running as root is the only launcher default changed for every test:
# oversubscription (more ranks than this machine's 2 cores) is asked for by
# `mpi` alone, so that the Slurm scenarios run the batch scripts with
# mpirun's own defaults, as users do.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1
T_TIMEOUT=${T_TIMEOUT:-120}
T_NAME=$(basename "$0" .sh)

# Enter a fresh directory for this scenario (or a sub-case of it).
enter() {
    local d=$T_WORK/$T_NAME${1:+/$1}
    [ -d "$d" ] && chattr -R -i "$d" 2>/dev/null # a failed run may leave immutable dirs
    rm -rf "$d" && mkdir -p "$d" && cd "$d" || exit 1
}

# py CODE ARGS...: Debian's python3 (with h5py and numpy), its output on stdout
py() {
    local code=$1
    shift
    /usr/bin/python3 -c "$code" "$@"
}

# h5val FILE DATASET: a dataset's value as Python prints it
h5val() {
    py 'import h5py,sys; print(h5py.File(sys.argv[1], "r")[sys.argv[2]][()])' "$1" "$2"
}

# h5cmp A B [OBJECT]: "same" if HDF5 files A and B hold the same objects
# with equal data and attributes (bitwise for floats), in all of them or
# under OBJECT; "differ"; or "error" (a file missing or unreadable).
# h5diff exits 0 for datasets of different shapes ("Not comparable"), so
# -c lists them: any such line but two empty datasets' makes a difference.
h5cmp() {
    local out rc
    out=$(h5diff -c -q "$1" "$2" ${3:+"$3"} 2>&1)
    rc=$?
    if [ $rc -gt 1 ]; then
        echo error
    elif [ $rc = 1 ] || grep "Not comparable" <<<"$out" | grep -qv "is an empty dataset$"; then
        echo differ
    else
        echo same
    fi
}
h5same() { [ "$(h5cmp "$@")" = same ]; }
h5differ() { [ "$(h5cmp "$@")" = differ ]; }

# same_h5 NAME A B [OBJECT]: h5same, as a test
same_h5() {
    h5same "$2" "$3" ${4:+"$4"} && pass "$1" || fail "$1" "$3 differs from $2 (h5diff${4:+ $4})"
}

# same_model NAME A B: model files A and B hold the same parameters, bit for bit
same_model() { same_h5 "$1" "$2" "$3" /layers; }

# same_bytes NAME A B: files A and B are byte-identical (as sha256sum tells)
same_bytes() {
    local a b
    a=$(sha256sum <"$2" 2>/dev/null | cut -c1-16) b=$(sha256sum <"$3" 2>/dev/null | cut -c1-16)
    [ -f "$2" ] && [ "$a" = "$b" ] && pass "$1" || fail "$1" "sha256 of $3 is ${b:-none}, of $2 ${a:-none}"
}

# synth TAG NP OUT SAMPLES FEATURES CLASSES SEED [HIDDEN]: a data file from
# `cairn data synth` on NP ranks, through the timeout; a failure is a TAP line
synth() {
    local tag=$1 np=$2 out=$3
    mpi "$tag" "$np" data synth --out "$out" --samples "$4" --features "$5" --classes "$6" \
        --seed "$7" ${8:+--hidden "$8"}
    [ "$(cat "$tag.rc")" = 0 ] || fail "fixture/$tag" "cairn data synth failed" "$tag.err"
}

# ckpt_ls DIR: `cairn ckpt ls DIR` on stdout, under the timeout
ckpt_ls() { timeout -k 5 "$T_TIMEOUT" "$CAIRN" ckpt ls "$1"; }

# counter_data: counter.h5, the 10 records jobs/counter.cfg reads
counter_data() {
    run counter-data "$CAIRN" data range --out counter.h5 --count 10
    [ "$(cat counter-data.rc)" = 0 ] || fail fixture/counter-data "cairn data range failed" counter-data.err
}

# demo_data TAG NP OUT [SAMPLES]: the demo's data file, from
# jobs/demo_data.sh; with SAMPLES, from the same generator with fewer
# samples (a shorter evaluation each epoch, where no test looks at the
# data's size or at an epoch's length)
demo_data() {
    if [ -n "${4:-}" ]; then
        synth "$1" "$2" "$3" "$4" 32 8 11 4
        return
    fi
    CAIRN=$CAIRN run "$1" "$CAIRN_ROOT/jobs/demo_data.sh" "$3" "$2"
    [ "$(cat "$1.rc")" = 0 ] || fail "fixture/$1" "jobs/demo_data.sh failed" "$1.err"
}

# sums of a directory's files, to show nothing in it changed
dir_sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum); }

# T_PREFIX names a pass of the suite (asan/ for the sanitizer build)
pass() { echo "ok - ${T_PREFIX:-}$T_NAME/$1"; }
fail() {
    echo "not ok - ${T_PREFIX:-}$T_NAME/$1: $2"
    shift 2
    local f
    for f in "$@"; do [ -f "$f" ] && sed 's/^/#   /' "$f" | tail -n 15; done
}

# run TAG CMD...: run with a timeout; stdout/stderr/exit code in TAG.out/.err/.rc
run() {
    local tag=$1
    shift
    timeout -k 5 "$T_TIMEOUT" "$@" >"$tag.out" 2>"$tag.err"
    echo $? >"$tag.rc"
}

# mpi TAG NP ARGS...: run build/cairn ARGS under mpirun -np NP (more ranks
# than cores allowed)
mpi() {
    local tag=$1 np=$2
    shift 2
    run "$tag" mpirun --oversubscribe -np "$np" "$CAIRN" "$@"
}

# Cases side by side within a scenario: most of a launch is waiting
# (mpirun's start-up, a rank's exit), so independent cases (their own
# files, no timing in their outcome) run T_PAR at once.  side CMD...: run
# CMD (a function of the scenario) in the background, its output kept;
# sides_done: wait for them all and print their outputs in the order they
# were started.
T_PAR=${T_PAR:-3}
side_n=0
side() {
    while [ "$(jobs -rp | wc -l)" -ge "$T_PAR" ]; do wait -n; done
    side_n=$((side_n + 1))
    "$@" >".side.$(printf %05d "$side_n")" 2>&1 &
}
sides_done() {
    wait
    cat .side.* 2>/dev/null
    rm -f .side.*
}

# expect_rc NAME TAG CODE
expect_rc() {
    local got
    got=$(cat "$2.rc")
    if [ "$got" = "$3" ]; then pass "$1"; else fail "$1" "exit $got, want $3" "$2.err" "$2.out"; fi
}

# expect_grep NAME FILE PATTERN (extended regex)
expect_grep() {
    if grep -Eq -- "$3" "$2"; then pass "$1"; else fail "$1" "no '$3' in $2" "$2"; fi
}

# expect_count NAME FILE PATTERN N: exactly N matching lines
expect_count() {
    local n
    n=$(grep -Ec -- "$3" "$2")
    if [ "$n" = "$4" ]; then pass "$1"; else fail "$1" "$n lines match '$3' in $2, want $4" "$2"; fi
}

# expect_eq NAME GOT WANT
expect_eq() {
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got '$2', want '$3'"; fi
}

# ---- Slurm scenarios ----

# slurm_client CMD...: a Slurm client command for the scenario's cluster
# (a multi-node cluster runs them on its controller: see nodes_lib.sh)
slurm_client() { "$@"; }

# first_run_fault SPEC [held]: once.sh, which runs cairn with
# CAIRN_FAULT=SPEC in the first launch after this call only, not in a
# rerun (in place or requeued): the first rank to start records its
# launch's PMIx namespace and the job's restart count, which every rank of
# a launch shares (srun reuses the namespace in a requeued job).  With
# "held", in every launch until the test has seen the fault act and
# touched once.fired (a launch that crashed at start-up, before the fault
# point, does not use it up), and where the shell test CONDITION holds.
# It execs cairn, so the ranks' command lines stay cairn's.
first_run_fault() { # SPEC [held [CONDITION]]
    rm -f once.ns once.fired
    if [ "${2:-}" = held ]; then
        printf '#!/bin/bash\nif [ ! -e once.fired ] && %s; then export CAIRN_FAULT=%s; fi\nexec %s "$@"\n' \
            "${3:-true}" "$1" "$CAIRN" >once.sh
    else
        cat >once.sh <<ONCE
#!/bin/bash
launch=\$PMIX_NAMESPACE/\${SLURM_RESTART_COUNT:-0}
echo "\$launch" >once.ns.\$\$ && ln once.ns.\$\$ once.ns 2>/dev/null; rm -f once.ns.\$\$
[ "\$(cat once.ns)" = "\$launch" ] && export CAIRN_FAULT=$1
exec $CAIRN "\$@"
ONCE
    fi
    chmod +x once.sh
}

# held TAG: until TAG's run (a submit with CAIRN=$PWD/once.sh, made by
# first_run_fault with an await: fault on train_step) waits for its
# signal; the runs that start from now on do not wait (not even when it
# never came: a requeued run must not wait for a signal no one sends)
HELD="CAIRN_FAULT holds op 'train_step' until a preemption signal"
held() {
    wait_log "$1.out" "$HELD" || fail "$1/held" "the run did not wait for its signal" "$1.out"
    touch once.fired
}

# wait_log FILE PATTERN [N]: until N (default 1) lines of FILE match
wait_log() {
    local i n
    for i in $(seq 1 600); do
        n=$(grep -Ec -- "$2" "$1" 2>/dev/null)
        [ "${n:-0}" -ge "${3:-1}" ] && return 0
        sleep 0.2
    done
    echo "wait_log: no '$2' in $1" >&2
    return 1
}

# job_wait ID: until the job (every task of an array) has ended for good;
# prints the final states
job_wait() {
    local i lines
    for i in $(seq 1 900); do
        lines=$(slurm_client scontrol -o show job "$1" 2>/dev/null)
        if [ -n "$lines" ] && ! echo "$lines" | grep -Eqv 'JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) '; then
            echo "$lines" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 | xargs
            return 0
        fi
        sleep 0.2
    done
    echo "timeout"
}

# metric FILE KIND KEY: the KEY values of metrics rows of KIND, space-separated
metric() {
    /usr/bin/python3 - "$@" <<'PY'
import json, sys
path, kind, key = sys.argv[1:4]
vals = []
for line in open(path):
    row = json.loads(line)
    if row.get("kind") == kind and key in row:
        vals.append(str(row[key]))
print(" ".join(vals))
PY
}

# slurm_cluster PORT [PART]: a private single-node Slurm cluster
# (slurm/testcluster) in ./cluster on $CAIRN_SLURM_PORT, by default PORT
# (each scenario its own: they run side by side), stopped when the
# scenario exits, SLURM_CONF exported.  Without Slurm, the scenario (or
# its PART) is skipped: the scenario ends here.
slurm_cluster() {
    if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
        echo "skip - $T_NAME${2:+/$2}: slurmctld or munged is not installed (make deps installs them)"
        exit 0
    fi
    cluster=$PWD/cluster
    export CAIRN_SLURM_PORT=${CAIRN_SLURM_PORT:-$1}
    trap '"$CAIRN_ROOT/slurm/testcluster/stop" "$cluster" >/dev/null 2>&1' EXIT
    trap 'exit 1' TERM INT # the driver's timeout: stop the cluster on the way out
    if ! "$CAIRN_ROOT/slurm/testcluster/start" "$cluster" >start.out 2>&1; then
        fail cluster/start "the test cluster did not start" start.out "$cluster/log/slurmctld.log" "$cluster/log/slurmd.log"
        exit 1
    fi
    pass cluster/start
    export SLURM_CONF=$cluster/slurm.conf
}
