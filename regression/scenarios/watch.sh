# Watching a run: progress lines within an epoch (step k of n, rates, the
# epoch's and the job's ETA), the job's ETA on the epoch line, and
# `cairn plot` of several run directories into a PNG that gnuplot drew
# (its size, not blank), with malformed metrics rows skipped with a
# warning and unusable input refused.  The interval is driven to every
# step, so what is logged does not depend on the machine's speed.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=180
mpi data 2 data synth --out w.h5 --samples 2000 --features 6 --classes 3 --seed 2
cat >w.cfg <<'CFG'
name = "watch";
seed = 1;
model = {
  inputs = 6;
  layers = ( { units = 16; activation = "relu"; }, { units = 3; activation = "identity"; } );
};
data = { file = "w.h5"; batch = 100; holdout = 0.2; };
ps = { shards = 1; optimizer = "adam"; lr = 0.01; };
stop = { max_epochs = 3; };
steps_per_epoch = 5;
CFG

# ---- progress lines: every step, when the interval is tiny --------------------------------
mpi often 2 run w.cfg --run-dir often --set progress=1e-9
expect_rc progress/rc often 0
# steps 1-4 of each epoch (step 5 ends it: the epoch line says the rest)
expect_count progress/lines often/cairn.log "cairn: epoch [1-3] step [1-4]/5 \([0-9]+%\): [0-9.]+ steps/s, [0-9]+ samples/s; epoch ETA [0-9]+:[0-9]{2}:[0-9]{2}, job ETA [0-9]+:[0-9]{2}:[0-9]{2} \(epoch [1-3] of 3\)$" 12
expect_grep progress/first often/cairn.log "cairn: epoch 1 step 1/5 \(20%\): "
expect_grep progress/eta-on-epoch-line often/cairn.log "epoch 1 done in [0-9.]+ s \(500 samples, [0-9]+ samples/s in the steps\); job ETA [0-9]+:[0-9]{2}:[0-9]{2} \(2 epochs left\)$"
expect_grep progress/one-left often/cairn.log "epoch 2 done in .*; job ETA [0-9:]+ \(1 epoch left\)$"
expect_count progress/none-after-last often/cairn.log "epoch 3 done in .*job ETA" 0
expect_count progress/rank-0-only often/cairn.log "cairn\[[0-9]+\]: epoch [0-9]+ step [0-9]+/" 0
expect_count progress/no-time-limit-outside-slurm often/cairn.log "time limit in" 0
mpi off 2 run w.cfg --run-dir off --set progress=0
expect_count progress/off off/cairn.log "step [0-9]+/5 \(" 0
run bad-progress "$CAIRN" check w.cfg --set progress=-1
expect_rc progress/negative-refused bad-progress 2
expect_grep progress/negative-says bad-progress.err "progress"

# ---- plot: three runs overlaid ------------------------------------------------------------
mpi lr 2 run w.cfg --run-dir lr-0.05 --set ps.lr=0.05
cp -r off off-damaged
printf '{"kind":"log","epoch":2,"loss":\n' >>off-damaged/metrics.jsonl # a row cut short
echo 'not json' >>off-damaged/metrics.jsonl
run plot "$CAIRN" plot often lr-0.05 off-damaged -o runs.png
expect_rc plot/rc plot 0
expect_grep plot/says plot.out "^plot: 3 runs into runs.png \(1200x900\)$"
expect_count plot/warned plot.err "cairn: warning: off-damaged/metrics.jsonl:[0-9]+: not a metrics row; skipped" 2
got=$(py '
from PIL import Image
im = Image.open("runs.png")
px = im.convert("RGB")
colors = px.getcolors(1 << 20) or []
print(im.format, im.size, "drawn" if len(colors) > 20 else "blank: %d colours" % len(colors))')
expect_eq plot/png "$got" "PNG (1200, 900) drawn"
run plot-size "$CAIRN" plot often -o small.png --size 640x480
expect_eq plot/size "$(py 'from PIL import Image; print(Image.open("small.png").size)')" "(640, 480)"

# values that are not finite numbers: null (how cairn logs a NaN loss) is a
# gap, NaN, Infinity, 1e400 or a string are left out with one warning per
# row naming FILE:LINE and the keys (the value escaped); the rest is drawn
mkdir nonfinite && grep -v '"kind":"phase"' often/metrics.jsonl >nonfinite/metrics.jsonl
n=$(wc -l <nonfinite/metrics.jsonl)
cat >>nonfinite/metrics.jsonl <<'ROWS'
{"time":1,"kind":"log","epoch":4,"step":5,"group":"stage0","train_loss":null,"loss":null,"accuracy":0.5}
{"time":1,"kind":"log","epoch":5,"step":5,"group":"stage0","train_loss":NaN,"loss":Infinity,"accuracy":0.5}
{"time":1,"kind":"log","epoch":6,"step":5,"group":"stage0","train_loss":1e400,"loss":0.5,"accuracy":0.5}
{"time":1,"kind":"epoch","epoch":6,"step":5,"seconds":1,"samples":-Infinity,"train_seconds":1}
ROWS
printf '{"time":1,"kind":"log","epoch":7,"loss":"\033[31m\377","accuracy":0.5}\n' >>nonfinite/metrics.jsonl
run plot-nonfinite "$CAIRN" plot nonfinite -o nonfinite.png
expect_rc plot/nonfinite/rc plot-nonfinite 0
expect_count plot/nonfinite/warnings plot-nonfinite.err "warning" 4
expect_grep plot/nonfinite/nan "plot-nonfinite.err" "^cairn: warning: nonfinite/metrics.jsonl:$((n + 2)): \"loss\" is Infinity, \"train_loss\" is NaN: not a finite number; left out of the plot$"
expect_grep plot/nonfinite/1e400 "plot-nonfinite.err" "^cairn: warning: nonfinite/metrics.jsonl:$((n + 3)): \"train_loss\" is 1e400: not a finite number"
expect_grep plot/nonfinite/samples "plot-nonfinite.err" "^cairn: warning: nonfinite/metrics.jsonl:$((n + 4)): \"samples\" is -Infinity: not a finite number"
expect_grep plot/nonfinite/escaped "plot-nonfinite.err" "^cairn: warning: nonfinite/metrics.jsonl:$((n + 5)): \"loss\" is \"\\\\x1b\[31m\\\\xff\": not a finite number"
if LC_ALL=C grep -q $'[\x1b\xff]' plot-nonfinite.err; then fail plot/nonfinite/no-raw-bytes "raw bytes in plot-nonfinite.err"; else pass plot/nonfinite/no-raw-bytes; fi
expect_count plot/nonfinite/null-is-silent plot-nonfinite.err ":$((n + 1)): " 0
[ -s nonfinite.png ] && pass plot/nonfinite/drawn || fail plot/nonfinite/drawn "no nonfinite.png"

# a metrics file that is not a regular file is refused before it is
# opened: a FIFO would block the open for good (the timeout would say so)
mkdir fifo-run && mkfifo fifo-run/metrics.jsonl
T_TIMEOUT=20 run plot-fifo "$CAIRN" plot fifo-run -o f.png
expect_rc plot/fifo/rc plot-fifo 2
expect_grep plot/fifo/says plot-fifo.err "^cairn: fifo-run/metrics.jsonl is a FIFO, not a regular file$"
mkdir link-run && ln -s ../often/metrics.jsonl link-run/metrics.jsonl
run plot-link "$CAIRN" plot link-run -o f.png
expect_rc plot/link/rc plot-link 2
expect_grep plot/link/says plot-link.err "^cairn: link-run/metrics.jsonl is a symbolic link, not a regular file$"
mkdir dir-run dir-run/metrics.jsonl
run plot-dir "$CAIRN" plot dir-run -o f.png
expect_rc plot/dir/rc plot-dir 2
expect_grep plot/dir/says plot-dir.err "dir-run/metrics.jsonl is a directory, not a regular file"
[ -e f.png ] && fail plot/refused-nothing-written "f.png was written" || pass plot/refused-nothing-written

mkdir empty-run && : >empty-run/metrics.jsonl
run plot-empty "$CAIRN" plot empty-run -o e.png
expect_rc plot/empty/rc plot-empty 2
expect_grep plot/empty/says plot-empty.err "empty-run/metrics.jsonl has no epoch to plot"
run plot-missing "$CAIRN" plot nowhere -o e.png
expect_rc plot/missing/rc plot-missing 2
expect_grep plot/missing/says plot-missing.err "cannot read nowhere/metrics.jsonl: No such file or directory"
run plot-no-out "$CAIRN" plot often
expect_rc plot/no-out plot-no-out 2
run plot-no-gnuplot env PATH=/nonexistent "$CAIRN" plot often -o g.png
expect_rc plot/no-gnuplot/rc plot-no-gnuplot 3
expect_grep plot/no-gnuplot/says plot-no-gnuplot.err "gnuplot failed \(exit 127: is it installed\? make deps installs it\); g.png not written"
[ -e e.png ] || [ -e g.png ] || [ -e g.png.tmp ] && fail plot/nothing-written "a PNG was left" || pass plot/nothing-written
