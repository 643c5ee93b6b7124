# jobs/tour.cfg: loops, parallel branches on their own communicators,
# report steps, two groups, epoch_end, download and exit.
. "$(dirname "$0")/../lib.sh"
enter
mpi tour 3 run "$JOBS/tour.cfg" --run-dir tour
expect_rc exit tour 0
# epoch_end logs acc after each epoch; the report's final run logs it too
expect_eq acc-per-epoch "$(metric tour/metrics.jsonl log acc)" "[9, 9, 9, 9] [18, 18, 18, 18]"
expect_eq acc-sum "$(metric tour/metrics.jsonl log acc_sum)" "72"
expect_eq monitor-epochs "$(metric tour/metrics.jsonl log epochs)" "2"
n=$(metric tour/metrics.jsonl report acc | wc -w)
[ "$n" -ge 8 ] && pass reports-logged || fail reports-logged "$n report values, want >= 8 (2 epochs x 4)"
expect_grep monitor-rank tour.out 'cairn\[2\]: exit: monitor/epochs = 2'

# A report step runs on its timer while its siblings work (here a 1 s
# sleep with a 20 ms timer), and once more when they finish.
cat >report.cfg <<'CFG'
name = "report";
groups = ( { name = "g"; ranks = 2; } );
init = ( { group = "g"; steps = ( { op = "fill"; out = "x"; value = 1.0; } ); } );
epoch = ( { group = "g"; steps = (
    { report = 20; steps = ( { op = "log"; in = "x"; rank = -1; } ); },
    { op = "sleep"; ms = 1000; },
    { op = "scale"; in = "x"; out = "x"; factor = 2.0; }
  ); } );
stop = { max_epochs = 1; };
CFG
mpi report 2 run report.cfg --run-dir rep
expect_rc report/exit report 0
rows=$(grep -c '"kind":"report"' rep/metrics.jsonl)
[ "$rows" -ge 4 ] && pass report/periodic || fail report/periodic "$rows report rows, want >= 4 (2 ranks, timer + final)"
# the final report sees the siblings' result
expect_count report/final rep/metrics.jsonl '"kind":"report".*"x":2' 2
