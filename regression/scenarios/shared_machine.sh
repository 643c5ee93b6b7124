# Safe on a machine shared with other users (issue 35): outputs and the
# node-local tier.
# - No output replaces what it should not: a device node (made here with
#   mknod, never the machine's /dev/null), a FIFO, a directory or a
#   symbolic link where an output goes is refused with exit 2 and a
#   message naming it, and stays as it was (predict -o, plot -o, data
#   synth --out, data range --out, ckpt extract -o, RUN_DIR/model.h5,
#   RUN_DIR/cairn.log), before any work is done.
# - No planted link is followed: links planted at every predictable
#   temporary name (RUN_DIR/model.h5.tmp, ckpt/index.tmp,
#   ckpt/local/index.tmp, ckpt/local/ckpt-eEEEEEE.tmp, the shared
#   checkpoint's ckpt-eEEEEEE.h5.tmp, plot's NAME.png.tmp) leave the files they point
#   at unchanged, and what cairn writes is a regular file.
# - The node-local tier is private: its tree is 0700 and its files 0600,
#   unreadable by a second, unprivileged user made here; a root owned by
#   that user, or writable by others, is refused with exit 2 before
#   anything in it is read; a root readable by others is made private; a
#   part or a position's directory replaced by a link to a copy elsewhere
#   is not followed (the resume falls back to the shared checkpoints and
#   ends with the same bytes).
# Decoys outside the run directories (mode 600, as a user's private files)
# are hashed before and after every case.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=180
OTHER=cairn-other # the second user
id -u "$OTHER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$OTHER" ||
    fail fixture/user "cannot create the user $OTHER"

mkdir decoys
for d in a b c d e f g h; do echo "private $d" >decoys/$d; done
chmod 600 decoys/*
before=$(dir_sums decoys)
decoys_kept() { expect_eq "$1/decoys-unchanged" "$(dir_sums decoys)" "$before"; }

demo_data data 2 demo.h5 8192 # a short evaluation
job=(run "$JOBS/demo.cfg" --set steps_per_epoch=4 --set stop.max_epochs=2)
mpi base 4 "${job[@]}" --run-dir base
expect_rc fixture/base base 0

# ---- outputs that are not regular files ---------------------------------------------------
mknod nulldev c 1 3 # what /dev/null is, in this directory
mkfifo fifo
mkdir adir
ln -s decoys/a alink
# refused NAME TAG WHAT TARGET: the run TAG exited 2, its message names
# TARGET and what it is, and TARGET is still what it was
refused() {
    local name=$1 tag=$2 what=$3 target=$4 kind
    expect_rc "$name/exit" "$tag" 2
    expect_grep "$name/said" "$tag.err" "$target exists and is not a regular file \($what\)"
    case $what in
    "a device") kind=-c ;; "a FIFO") kind=-p ;; "a directory") kind=-d ;; *) kind=-L ;;
    esac
    [ $kind "$target" ] && pass "$name/kept" || fail "$name/kept" "$target is no longer $what"
}
for t in "nulldev:a device" "fifo:a FIFO" "adir:a directory" "alink:a symbolic link"; do
    f=${t%%:*} what=${t#*:}
    run "predict-$f" "$CAIRN" predict base/model.h5 demo.h5 -o "$f"
    refused "predict/$f" "predict-$f" "$what" "$f"
    run "plot-$f" "$CAIRN" plot base -o "$f"
    refused "plot/$f" "plot-$f" "$what" "$f"
done
mpi predict2-fifo 2 predict base/model.h5 demo.h5 -o fifo
refused predict/2-ranks/fifo predict2-fifo "a FIFO" fifo
mpi synth-fifo 2 data synth --out fifo --samples 100 --features 4 --classes 2
refused data-synth/fifo synth-fifo "a FIFO" fifo
run range-dev "$CAIRN" data range --out nulldev --count 10
refused data-range/device range-dev "a device" nulldev
run extract-link "$CAIRN" ckpt extract base/ckpt --blob ps/L0.b -o alink
refused ckpt-extract/link extract-link "a symbolic link" alink
run nodir "$CAIRN" predict base/model.h5 demo.h5 -o no/such/dir/p.h5
expect_rc predict/no-directory/exit nodir 2
expect_grep predict/no-directory/said nodir.err "cannot write no/such/dir/p.h5: no directory no/such/dir"
ls ./*.tmp >/dev/null 2>&1 && fail outputs/no-temporary "left: $(ls ./*.tmp)" || pass outputs/no-temporary
decoys_kept outputs

# a run whose model.h5 or cairn.log is not a regular file stops at the door
mkdir -p fifo-model && mkfifo fifo-model/model.h5
mpi fifo-model 4 "${job[@]}" --run-dir fifo-model
refused run/model-fifo fifo-model "a FIFO" fifo-model/model.h5
[ -e fifo-model/ckpt/index ] && fail run/model-fifo/no-work "it trained" || pass run/model-fifo/no-work
mkdir -p link-log && ln -s "$PWD/decoys/b" link-log/cairn.log
mpi link-log 4 "${job[@]}" --run-dir link-log
expect_rc run/log-link/exit link-log 2
expect_grep run/log-link/said link-log.err "link-log/cairn.log exists and is not a regular file \(a symbolic link\)"
decoys_kept run

# ---- links planted at the temporary names ------------------------------------------------
mkdir -p planted/ckpt/local
ln -s "$PWD/decoys/c" planted/model.h5.tmp
ln -s "$PWD/decoys/d" planted/ckpt/index.tmp
ln -s "$PWD/decoys/e" planted/ckpt/local/index.tmp
ln -s "$PWD/decoys/f" planted/ckpt/local/ckpt-e000001.tmp
ln -s "$PWD/decoys/g" planted/ckpt/ckpt-e000002.h5.tmp
mpi planted 4 "${job[@]}" --run-dir planted --set "checkpoint.local=\"$PWD/nodelocal\""
expect_rc planted/exit planted 0
for f in model.h5 ckpt/index ckpt/local/index ckpt/ckpt-e000002.h5; do
    [ -f "planted/$f" ] && [ ! -L "planted/$f" ] && pass "planted/$f-regular" ||
        fail "planted/$f-regular" "$(ls -l "planted/$f" 2>&1)"
done
# the node-local manifest of epoch 1 was committed (not through the link),
# and removed with the node-local tier once the final shared save
# superseded it
expect_grep planted/node-local-saved planted/cairn.log "checkpoint saved \(node-local\): epoch 1 step 0 "
expect_eq planted/no-link-left "$(find planted/ckpt/local -type l | wc -l)" 0
same_bytes planted/model base/model.h5 planted/model.h5
ln -s "$PWD/decoys/h" planted.png.tmp
run plot-planted "$CAIRN" plot planted -o planted.png
expect_rc plot/planted/exit plot-planted 0
[ -f planted.png ] && [ ! -L planted.png ] && pass plot/planted/regular || fail plot/planted/regular "$(ls -l planted.png)"
decoys_kept planted

# an index is untrusted too: a name in it cannot drive the terminal
mkdir -p esc/ckpt && printf '1\t0\tckpt-\033[31m.h5\t10\tok\n' >esc/ckpt/index
run esc-ls "$CAIRN" ckpt ls esc/ckpt
expect_rc ckpt-ls/escaped/exit esc-ls 0
expect_grep ckpt-ls/escaped/shown esc-ls.out 'ckpt-\\x1b\[31m\.h5'
grep -q $'\033' esc-ls.out && fail ckpt-ls/escaped/no-escape "an ESC byte reached stdout" || pass ckpt-ls/escaped/no-escape

# killed TAG: a run of 2 epochs killed in its final (shared) save, so its
# newest checkpoint is the node-local one of epoch 1
local_job=("${job[@]}" --set "checkpoint.local=\"$PWD/nodelocal\"")
killed() {
    rm -rf nodelocal
    CAIRN_FAULT=kill:write:1:2 mpi "$1-killed" 4 "${local_job[@]}" --run-dir "$1"
    expect_rc "$1/killed" "$1-killed" 137
    root=$(echo nodelocal/cairn-"$(id -u)"-*)
}

# ---- the node-local tier is private -------------------------------------------------------
# (a killed run's tree: a run that ends with a shared save removes its parts)
killed private
[ -d "$root" ] && pass private/root-named-by-user || fail private/root-named-by-user "$(ls nodelocal)"
expect_eq private/root-mode "$(stat -c %a "$root")" 700
expect_eq private/dir-mode "$(stat -c %a "$root"/ckpt-e000001)" 700
expect_eq private/part-modes "$(stat -c %a "$root"/ckpt-e000001/* | sort -u | xargs)" 600
runuser -u "$OTHER" -- cat "$root/ckpt-e000001/rank000000" >/dev/null 2>other.err &&
    fail private/other-user-cannot-read "$OTHER read a part" || pass private/other-user-cannot-read
expect_grep private/other-user-denied other.err "Permission denied"

# refused_root TAG WHY: the rerun stops with exit 2 saying WHY, and loads nothing
refused_root() {
    mpi "$1-rerun" 4 "${local_job[@]}" --run-dir "$1"
    expect_rc "$1/exit" "$1-rerun" 2
    expect_grep "$1/said" "$1-rerun.err" "$2"
    expect_count "$1/nothing-loaded" "$1/cairn.log" "checkpoint loaded" 0
}
killed owner
chown -R "$OTHER" "$root"
refused_root owner "$root is owned by uid $(id -u "$OTHER"), not by this user \(uid 0\)"
killed writable
chmod 777 "$root"
refused_root writable "$root is writable by others \(mode 0777\)"
killed link-root
mv "$root" elsewhere && ln -s "$PWD/elsewhere" "$root"
refused_root link-root "$root is not a directory \(a symbolic link\)"

# fell_back TAG: the rerun does not load the node-local checkpoint, says
# why, resumes from epoch 0's shared one and ends with the same bytes
fell_back() {
    mpi "$1-rerun" 4 "${local_job[@]}" --run-dir "$1"
    expect_rc "$1/exit" "$1-rerun" 0
    expect_grep "$1/said" "$1/cairn.log" "node-local checkpoint after epoch 1 \(local/ckpt-e000001\) cannot be loaded: $2"
    expect_grep "$1/fell-back" "$1/cairn.log" "resuming after epoch 0 "
    same_bytes "$1/model" base/model.h5 "$1/model.h5"
}
killed link-part
mv "$root/ckpt-e000001/rank000002" copy-of-part && ln -s "$PWD/copy-of-part" "$root/ckpt-e000001/rank000002"
fell_back link-part ".*rank000002.*(Too many levels of symbolic links|symbolic link)"
killed link-dir
mv "$root/ckpt-e000001" copy-of-dir && ln -s "$PWD/copy-of-dir" "$root/ckpt-e000001"
fell_back link-dir "no node of this run holds rank 0's part"
killed readable
chmod 755 "$root"
mpi readable-rerun 4 "${local_job[@]}" --run-dir readable
expect_rc readable/exit readable-rerun 0
expect_grep readable/loaded readable/cairn.log "checkpoint loaded \(node-local\): epoch 1"
expect_eq readable/made-private "$(stat -c %a "$root")" 700
same_bytes readable/model base/model.h5 readable/model.h5
decoys_kept node-local
