#!/usr/bin/env bash
# cairn data import against the readers users would pick instead, on the
# same files and cores in one run: pandas.read_csv (Debian's python3-pandas,
# its C parser) and numpy.loadtxt on a numeric CSV (1,000,000 rows of 13
# features and a label), pandas on a Criteo-layout TSV (400,000 rows;
# pandas only parses it, cairn also hashes 26 columns), and the file's raw
# read rate from the page cache (the limit of any reader).  MB/s of input;
# best of 3 each; cairn timed with its launch (mpirun's included), the
# peers inside Python (their start-up not counted).  Not a test.
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
n_raw=$($peers raw num.csv)
n_c1=$(secs "$cairn" data import --out n.h5 --label label --progress 0 num.csv)
n_c2=$(secs mpirun -np 2 "$cairn" data import --out n.h5 --label label --progress 0 num.csv)
n_pd=$($peers pandas-csv num.csv)
n_np=$($peers loadtxt num.csv)
c_raw=$($peers raw criteo.tsv)
c_c1=$(secs "$cairn" data import --format criteo --log1p --out c.h5 --progress 0 criteo.tsv)
c_c2=$(secs mpirun -np 2 "$cairn" data import --format criteo --log1p --out c.h5 --progress 0 criteo.tsv)
c_pd=$($peers pandas-criteo criteo.tsv)
/usr/bin/python3 - "$(stat -c %s num.csv)" "$n_raw" "$n_c1" "$n_c2" "$n_pd" "$n_np" \
    "$(stat -c %s criteo.tsv)" "$c_raw" "$c_c1" "$c_c2" "$c_pd" <<'PY'
import sys
v = [float(x) for x in sys.argv[1:]]
for title, (size, raw, c1, c2, pd, *np) in (("numeric CSV, 1e6 rows x 14 columns", v[0:6]),
                                             ("Criteo TSV, 4e5 rows x 40 columns", v[6:11])):
    mb = size / 1e6
    print("%s: %.0f MB" % (title, mb))
    print("%-32s %10s %10s %10s" % ("", "MB/s", "vs pandas", "vs raw"))
    rows = [("raw read (page cache)", raw), ("cairn data import, 1 rank", c1), ("cairn data import, 2 ranks", c2),
            ("pandas.read_csv", pd)] + [("numpy.loadtxt", t) for t in np]
    for name, t in rows:
        print("%-32s %10.1f %9.2fx %9.3f" % (name, mb / t, pd / t, raw / t))
PY
