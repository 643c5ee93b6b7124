# `cairn data import`: users' data into the layout cairn-job(5) documents.
# Each input is also read by an independent reader (Python's csv module,
# numpy.loadtxt, numpy.load; regression/import_check.py), and the file
# cairn writes must hold exactly what they read, bit for bit: a CSV with
# every quoting case (quoted names, doubled quotes, commas and newlines in
# fields, CRLF, blank lines, missing values), a numeric CSV, the Criteo
# layout over two files (hashes recomputed in Python), and .npy/.npz
# arrays of every dtype it takes (big-endian, Fortran order, deflated).
# The same bytes come out on 1, 2 and 3 ranks.  A job with two tables
# trains on the Criteo import.  Every kind of bad input is exit 2 with
# FILE:LINE:COLUMN (the same on 3 ranks), leaves the output as it was, and
# --skip-bad N skips at most N bad records, naming the first.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=90
ic() { /usr/bin/python3 "$CAIRN_ROOT/regression/import_check.py" "$@"; }

# imp TAG NP ARGS...: `cairn data import ARGS` on NP ranks in directory TAG
# (the output's name, recorded in it, is the same in each)
imp() {
    local tag=$1 np=$2
    shift 2
    mkdir -p "$tag" && (cd "$tag" && mpi imp "$np" data import "$@")
}

# ---- CSV, quoted every way, on 1, 2 and 3 ranks
ic csv q.csv 3000 1
for np in 1 2 3; do
    imp csv$np "$np" --out q.h5 --label label --ids id=id --hash note=note:1000 --seed 5 --fill -7.5 ../q.csv
    expect_rc csv/rc/$np csv$np/imp 0
done
expect_grep csv/says csv1/imp.out "^q.h5: 3000 rows from 1 csv file"
expect_eq csv/as-csv-module "$(ic check-csv q.csv csv1/q.h5 2>&1)" ok
same_bytes csv/same-on-2-ranks csv1/q.h5 csv2/q.h5
same_bytes csv/same-on-3-ranks csv1/q.h5 csv3/q.h5
expect_eq csv/records-source "$(py 'import h5py,sys; f = h5py.File(sys.argv[1]); print(f.attrs["import_sources"].decode().strip(), f.attrs["import_skipped"].decode())' csv1/q.h5)" \
    "../q.csv	$(stat -c %s q.csv) 0"

# ---- numbers only, as numpy.loadtxt reads them (no header)
ic numeric n.csv 2000 3
imp num 2 --out n.h5 --no-header ../n.csv
expect_rc numeric/rc num/imp 0
expect_eq numeric/as-loadtxt "$(ic check-numeric n.csv num/n.h5 2>&1)" ok

# ---- the Criteo layout, two days, hashed as documented; then a job on it
ic criteo day0.tsv 1500 1
ic criteo day1.tsv 1200 2
for np in 1 3; do
    imp criteo$np "$np" --format criteo --rows 5000 --log1p --out criteo.h5 ../day0.tsv ../day1.tsv
    expect_rc criteo/rc/$np criteo$np/imp 0
done
expect_eq criteo/as-python "$(ic check-criteo 5000 day0.tsv day1.tsv criteo1/criteo.h5 2>&1)" ok
same_bytes criteo/same-on-3-ranks criteo1/criteo.h5 criteo3/criteo.h5
if [ -z "${T_SANITIZED:-}" ]; then # training is not the import's code
    (cd criteo1 && mpi train 4 run "$JOBS/criteo.cfg" --run-dir run --set stop.max_epochs=1 \
        --set model.embeddings.0.rows=5000 --set model.embeddings.1.rows=5000)
    expect_rc criteo/trains criteo1/train 0
    expect_grep criteo/finished criteo1/train.out "job criteo finished: 1 epoch run"
    [ -f criteo1/run/model.h5 ] && pass criteo/model || fail criteo/model "no criteo1/run/model.h5"
fi

# ---- NumPy: .npy (big-endian, Fortran order) and .npz (stored, deflated)
mkdir -p npy && ic npy npy
for np in 1 2; do
    imp npy$np "$np" --out a.h5 ../npy/x.npy ../npy/w.npy ../npy/big.npy ../npy/more.npz ../npy/z.npz
    expect_rc npy/rc/$np npy$np/imp 0
done
expect_eq npy/as-numpy "$(ic check-npy npy npy1/a.h5 2>&1)" ok
same_bytes npy/same-on-2-ranks npy1/a.h5 npy2/a.h5
imp npyname 1 --out a.h5 features=../npy/x.npy
expect_eq npy/named "$(h5ls npyname/a.h5 | cut -d' ' -f1)" features

# ---- a UTF-8 byte order mark and blank lines before the header
printf '\xef\xbb\xbf\n\r\nid,b,y\n1,2.5,0\n\n3,4,1\n' >bom.csv
imp bom 2 --out b.h5 --label y --ids id=id ../bom.csv
expect_rc bom/rc bom/imp 0
expect_eq bom/values "$(py 'import h5py; f = h5py.File("bom/b.h5"); print(f["id"][()].tolist(), f["features"][()].tolist(), f["labels"][()].tolist())')" \
    "[1, 3] [[2.5], [4.0]] [0, 1]"

# without a header, a second file's BOM is no record start: no record lost
# wherever the ranks' ranges fall (5 ranks on 16 bytes)
printf '1,2\n3,4\n' >nh1.csv && printf '\xef\xbb\xbf5,6\n7,8\n' >nh2.csv
imp bom5 5 --out b.h5 --no-header ../nh1.csv ../nh2.csv
expect_eq bom/no-header/5-ranks "$(py 'import h5py; print(h5py.File("bom5/b.h5")["features"][()].tolist())')" \
    "[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]"

# ---- progress, when asked for every instant
imp prog 1 --out q.h5 --progress 1e-9 --label label --ids id=id --hash note=note:1000 --fill 0 ../q.csv
expect_grep progress/line prog/imp.err "^cairn: data import: [0-9.]+ of 0\.[0-9] MB \([0-9]+%\), [0-9.]+ MB/s, ETA [0-9]+ s$"

# ---- bad input: exit 2, FILE:LINE:COLUMN, the output untouched
echo keep >out.h5
# bad NAME FILE 'CONTENT' MESSAGE [ARGS...]: CONTENT (printf) as FILE is refused with MESSAGE
bad() {
    local name=$1 file=$2 content=$3 msg=$4
    shift 4
    printf "$content" >"$file"
    run "bad-$name" "$CAIRN" data import --out out.h5 "$@" "$file"
    expect_rc "bad/$name/exit" "bad-$name" 2
    expect_grep "bad/$name/says" "bad-$name.err" "^cairn: data import: $msg\$"
}
bad fields-few f.csv 'a,b,label\n1,2,0\n3,4\n' "f.csv:3:4: 2 fields, expected 3" --label label
bad fields-many f.csv 'a,b,label\n1,2,0\n5,6,1,7\n' "f.csv:3:7: more fields than the columns" --label label
bad not-number f.csv 'a,b,label\n1,2,0\n8,x1,1\n' "f.csv:3:3: column 'b': 'x1' is not a number" --label label
bad f32-range f.csv 'a,b,label\n9,1e39,0\n' "f.csv:2:3: column 'b': 1e39 is beyond f32's range" --label label
bad label-range f.csv 'a,b,label\n1,2,2147483648\n' "f.csv:2:5: column 'label': class label 2147483648 is out of range \(0 to 2\^31 - 1\)" --label label
bad label-int f.csv 'a,b,label\n1,2,1.5\n' "f.csv:2:5: column 'label': class label '1.5' is not an integer" --label label
bad id-range f.csv 'a,u\n1,-2\n' "f.csv:2:3: column 'u': id -2 is out of range \(-1 or more\)" --ids u=u
bad missing f.csv 'a,b\n1,\n' "f.csv:2:3: column 'b': a missing value \(--fill sets one\)"
bad after-quote f.csv 'a,b\n1,"2"x\n' "f.csv:2:6: text after a closing quote"
bad stray-quote f.csv 'a,b\n1,2"3\n' "f.csv:2:4: a quote inside a field that does not start with one"
bad open-quote f.csv 'a,b\n1,2\n"3,4\n' "f.csv:3:1: a quoted field without its closing quote"
bad header-utf8 f.csv 'a,\xff\n1,2\n' "f.csv:1:3: column 2's name is not UTF-8"
bad in-quoted-line f.csv 'a,b,c\n"x\ny",2,z\n' "f.csv:3:6: column 'c': 'z' is not a number" --skip a
bad no-rows f.csv 'a,b\n' "f.csv: no records \(only a header or blank lines\)"
bad no-column f.csv 'a,b\n1,2\n' "--label: no column 'zz' \(a name of the header or --columns, a number from 1 to 2, or N-M\)" --label zz
bad criteo-fields d.tsv '1\t2\n' "d.tsv:1:4: 2 fields, expected 40" --format criteo
bad npy-magic x.npy 'not an array' "x.npy: not a .npy array \(no \\\\x93NUMPY version 1 to 3\)"
bad not-regular /dev/null '' "cannot read /dev/null: not a regular file" --format csv
bad fields-quoted f.csv 'a,b,c\n1,"22"\n' "f.csv:2:7: 2 fields, expected 3"
bad feature-twice f.csv 'a,b,y\n1,2,0\n' "--features: column 'a' is already used" --label y --features a,a
bad skip-used f.csv 'a,b,y\n1,2,0\n' "--skip: column 'y' is used \(--label, --target, --ids or --hash\)" --label y --skip y
bad long-header f.csv "$(python3 -c 'print(",".join(["c"] * 65537))')\n" "f.csv:1: more than 65536 columns"
printf 'a,b,label\n' >inch.csv # a stray quote runs its record on to the next: never skipped
for i in $(seq 1 300); do [ "$i" = 3 ] || [ "$i" = 250 ] && echo "$i,2\" screen,0" || echo "$i,$i,1"; done >>inch.csv
mpi bad-inch 3 data import --out out.h5 --label label --skip-bad 5 inch.csv
expect_rc bad/runaway-quote/exit bad-inch 2
expect_grep bad/runaway-quote/says bad-inch.err "^cairn: data import: inch.csv:4:4: a quote inside a field that does not start with one; by the quotes its record runs on to line 251, so it cannot be skipped$"
{ printf 'x,y\n1,2\na"b,2\n'; yes 1,2 | head -n 4500000; } >runon.csv # 18 MB, no quote after the stray one
mpi bad-runon 2 data import --out out.h5 --skip-bad 100000000 runon.csv
expect_rc bad/runaway-16MiB/exit bad-runon 2
expect_grep bad/runaway-16MiB/says bad-runon.err "^cairn: data import: runon.csv:3: a record of more than 16 MiB \(a quote without its pair\?\)$"
rm -f runon.csv
run bad-both "$CAIRN" data import --out out.h5 --label a --target b f.csv
expect_grep bad/label-and-target bad-both.err "^cairn: --label and --target exclude each other"
run bad-npyopt "$CAIRN" data import --out out.h5 --label a x.npy
expect_grep bad/npy-option bad-npyopt.err "^cairn: --label is for CSV and TSV, not NumPy arrays"
printf 'a,b\n1,2\n' >h1.csv && printf 'a,c\n1,2\n' >h2.csv
run bad-header "$CAIRN" data import --out out.h5 h1.csv h2.csv
expect_grep bad/header/says bad-header.err "^cairn: data import: h2.csv:1: a header other than h1.csv's"
ic npy . >/dev/null 2>&1 # x.npy and friends here: a truncated one, a complex one
py 'import numpy as np; np.save("c.npy", np.zeros(3, np.complex64)); b = open("x.npy","rb").read(); open("t.npy","wb").write(b[:-5])'
run bad-npy-dtype "$CAIRN" data import --out out.h5 c.npy
expect_grep bad/npy-dtype "bad-npy-dtype.err" "c.npy: dtype '<c8' is not imported"
run bad-npy-short "$CAIRN" data import --out out.h5 t.npy
expect_grep bad/npy-short "bad-npy-short.err" "t.npy: [0-9]+ bytes of data, but its shape needs [0-9]+ \(truncated\?\)"
run bad-npy-join "$CAIRN" data import --out out.h5 w=x.npy w=w.npy
expect_grep bad/npy-join "bad-npy-join.err" "w.npy: array 'w' \(f64, 3 dimensions\) does not join the one before it in w=x.npy"
py 'import numpy as np; np.save("fx.npy", np.zeros((10, 2), np.float32)); np.save("ly.npy", np.zeros(7, np.int32)); np.save("z.npy", np.zeros((0, 3)))'
run bad-npy-rows "$CAIRN" data import --out out.h5 features=fx.npy labels=ly.npy
expect_grep bad/npy-rows "bad-npy-rows.err" "array 'labels' has 7 rows, array 'features' 10 \(a data file's datasets go row by row\)"
py 'import zipfile; zipfile.ZipFile("e.npz", "w").close()'
run bad-npz-empty "$CAIRN" data import --out out.h5 e.npz
expect_grep bad/npz-empty "bad-npz-empty.err" "no arrays \(an empty .npz\?\)"
run bad-npy-empty "$CAIRN" data import --out out.h5 z.npy
expect_grep bad/npy-no-rows "bad-npy-empty.err" "the arrays have no rows"
expect_eq bad/output-kept "$(cat out.h5)" keep
expect_eq bad/no-temporary "$(ls -a | grep -c '^\.out\.h5\|out\.h5\.')" 0

# the first bad record on 3 ranks is the one a single rank names
printf 'a,b,label\n' >many.csv
for i in $(seq 1 3000); do echo "$i,$((i % 7)),$((i % 2))"; done >>many.csv
sed -i '2500s/.*/1,oops,0/; 2900s/.*/1,2/' many.csv
mpi bad-ranks 3 data import --out out.h5 --label label many.csv
expect_rc bad/3-ranks/exit bad-ranks 2
expect_grep bad/3-ranks/first bad-ranks.err "^cairn: data import: many.csv:2500:3: column 'b': 'oops' is not a number$"

# ---- --skip-bad: at most N, reported with the first lines
mpi skip 3 data import --out s.h5 --label label --skip-bad 2 many.csv
expect_rc skip/exit skip 0
expect_grep skip/says skip.out "^s.h5: 2998 rows from 1 csv file .*; 2 bad records skipped$"
expect_count skip/names skip.err "^cairn: data import: skipped many.csv:(2500:3|2900:4): " 2
mpi skip-over 3 data import --out s2.h5 --label label --skip-bad 1 many.csv
expect_rc skip/over/exit skip-over 2
expect_grep skip/over/says skip-over.err "many.csv:2500:3: column 'b': 'oops' is not a number \(and more bad records after it: more than --skip-bad 1\)"
[ ! -e s2.h5 ] && pass skip/over/no-output || fail skip/over/no-output "s2.h5 exists"
