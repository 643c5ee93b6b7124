#!/usr/bin/env bash
# cairn data import against the readers users would pick instead, on the
# same files and cores in one run: pandas.read_csv (Debian's python3-pandas,
# its C parser) and numpy.loadtxt on a numeric CSV (1,000,000 rows of 13
# features and a label), pandas on a Criteo-layout TSV (400,000 rows;
# pandas only parses it, cairn also hashes 26 columns), and the file's raw
# read rate from the page cache (the limit of any reader).  MB/s of input;
# best of 3 each.  cairn's own time (its summary line: from its start to
# the file committed, synced and renamed) and its wall time with the launch
# (mpirun's); the peers timed inside Python (their start-up and pandas'
# import not counted).  Not a test.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cairn=$root/build/cairn
peers="/usr/bin/python3 $root/regression/bench/import_peers.py"
work=$root/build/bench/import
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
mkdir -p "$work" && cd "$work"
[ -f num.csv ] || $peers make-numeric num.csv 1000000
[ -f criteo.tsv ] || $peers make-criteo criteo.tsv 400000
secs() { $peers time "$@"; } # CMD...: the best wall seconds of 3 runs
cat num.csv criteo.tsv >/dev/null # into the page cache
c1="$cairn data import --progress 0"
c2="mpirun -np 2 $cairn data import --progress 0"
n_args="--out n.h5 --label label num.csv"
c_args="--format criteo --log1p --out c.h5 criteo.tsv"
n_raw=$($peers raw num.csv)
n_c1=$($peers cairn $c1 $n_args) n_c1w=$(secs $c1 $n_args)
n_c2=$($peers cairn $c2 $n_args) n_c2w=$(secs $c2 $n_args)
n_pd=$($peers pandas-csv num.csv)
n_ph=$($peers pandas-h5 num.csv)
n_np=$($peers loadtxt num.csv)
c_raw=$($peers raw criteo.tsv)
c_c1=$($peers cairn $c1 $c_args) c_c1w=$(secs $c1 $c_args)
c_c2=$($peers cairn $c2 $c_args) c_c2w=$(secs $c2 $c_args)
c_pd=$($peers pandas-criteo criteo.tsv)
/usr/bin/python3 - "$(stat -c %s num.csv)" "$n_raw" "$n_c1" "$n_c1w" "$n_c2" "$n_c2w" "$n_pd" "$n_ph" "$n_np" \
    "$(stat -c %s criteo.tsv)" "$c_raw" "$c_c1" "$c_c1w" "$c_c2" "$c_c2w" "$c_pd" <<'PY'
import sys
v = [float(x) for x in sys.argv[1:]]
def table(title, size, pd, rows):
    mb = size / 1e6
    print("%s: %.0f MB" % (title, mb))
    print("%-50s %8s %10s %8s" % ("", "MB/s", "vs pandas", "vs raw"))
    for name, t in rows:
        print("%-50s %8.1f %9.2fx %8.3f" % (name, mb / t, pd / t, rows[0][1] / t))
size, raw, c1, c1w, c2, c2w, pd, ph, lt = v[0:9]
table("numeric CSV, 1e6 rows x 14 columns", size, pd,
      [("raw read (page cache)", raw), ("cairn, 1 rank (launch included)", c1w), ("cairn, 1 rank", c1),
       ("cairn, 2 ranks (mpirun's launch included)", c2w), ("cairn, 2 ranks", c2),
       ("pandas.read_csv, to arrays", pd), ("pandas.read_csv, to an HDF5 file (h5py, synced)", ph),
       ("numpy.loadtxt, to an array", lt)])
size, raw, c1, c1w, c2, c2w, pd = v[9:16]
table("Criteo TSV, 4e5 rows x 40 columns", size, pd,
      [("raw read (page cache)", raw), ("cairn, 1 rank (launch included)", c1w), ("cairn, 1 rank", c1),
       ("cairn, 2 ranks (mpirun's launch included)", c2w), ("cairn, 2 ranks", c2),
       ("pandas.read_csv, parsing only (no hashing)", pd)])
PY
