# make install and make uninstall, as a site installs cairn: into a
# prefix (and staged under DESTDIR), loaded as an environment module with
# Lmod; from the installed copy alone, `cairn --version`, the man pages,
# the Python loader and the counter job from share/cairn/jobs work; the
# uninstall removes exactly what was installed and nothing else.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=180
LMOD_INIT=/usr/share/lmod/lmod/init/bash
if [ ! -r "$LMOD_INIT" ]; then
    fail lmod/installed "$LMOD_INIT is missing (make deps installs Debian's lmod)"
    exit 0
fi
version=$(sed -n 's/^#define CAIRN_VERSION "\(.*\)"/\1/p' "$CAIRN_ROOT/include/cairn/version.h")
pre=$PWD/opt
mkdir -p "$pre/bin" "$pre/share/man/man1"
echo keep >"$pre/bin/other" # the site's own files in the prefix
echo keep >"$pre/share/man/man1/other.1"

run install make -s -C "$CAIRN_ROOT" install PREFIX="$pre"
expect_rc install/rc install 0
expect_grep install/says install.out "installed cairn $version in $pre \([0-9]+ files; module use $pre/share/modulefiles\)"
for f in bin/cairn share/man/man1/cairn.1 share/man/man5/cairn-job.5 share/cairn/jobs/demo.cfg \
    share/cairn/jobs/counter.cfg share/cairn/slurm/cairn.sbatch share/cairn/slurm/sweep.sbatch \
    share/cairn/python/cairn_model.py share/cairn/python/cairn_lm.py "share/modulefiles/cairn/$version"; do
    [ -f "$pre/$f" ] && pass "install/has/$f" || fail "install/has/$f" "$pre/$f is missing"
done
# an earlier install's file that this one does not install: gone after a reinstall
echo old >"$pre/share/modulefiles/cairn/0.0.1" && echo share/modulefiles/cairn/0.0.1 >>"$pre/share/cairn/MANIFEST"
run reinstall make -s -C "$CAIRN_ROOT" install PREFIX="$pre"
expect_rc reinstall/rc reinstall 0
[ -e "$pre/share/modulefiles/cairn/0.0.1" ] && fail reinstall/old-removed "the earlier install's file is left" ||
    pass reinstall/old-removed
expect_eq install/manifest-lists-all "$(cd "$pre" && find . -type f ! -name other ! -name other.1 | sed 's|^\./||' | sort)" \
    "$(sort "$pre/share/cairn/MANIFEST")"

# staged for a package: the files under DESTDIR, the paths in them PREFIX's
run staged make -s -C "$CAIRN_ROOT" install PREFIX=/opt/cairn DESTDIR="$PWD/stage"
expect_rc staged/rc staged 0
[ -x stage/opt/cairn/bin/cairn ] && pass staged/binary || fail staged/binary "stage/opt/cairn/bin/cairn is missing"
expect_grep staged/module-names-prefix "stage/opt/cairn/share/modulefiles/cairn/$version" "^set root \{/opt/cairn\}$"

# the module, with Lmod, in a clean shell: everything from the prefix
mkdir work
cat >loaded.sh <<EOF
set -e
. $LMOD_INIT
before=\$(man -w ls 2>/dev/null || echo none)
module use $pre/share/modulefiles
module load cairn
command -v cairn
cairn --version
man -w cairn
man -w 5 cairn-job
echo "system man pages: \$before \$(man -w ls 2>/dev/null || echo none)"
python3 -c 'import cairn_model; print(cairn_model.__file__)'
echo "share \$CAIRN_SHARE"
cd work
cairn data range --out counter.h5 --count 10 >/dev/null
mpirun --oversubscribe -np 2 cairn run "\$CAIRN_SHARE/jobs/counter.cfg" --set groups.0.ranks=2 --run-dir run
module unload cairn
command -v cairn || echo "unloaded"
EOF
run module env -i HOME="$HOME" PATH=/usr/bin:/bin OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OPENBLAS_NUM_THREADS=1 bash loaded.sh
expect_rc module/rc module 0
expect_grep module/cairn-on-path module.out "^$pre/bin/cairn$"
expect_grep module/version module.out "^cairn $version$"
expect_grep module/man module.out "^$pre/share/man/man1/cairn.1"
expect_grep module/man5 module.out "^$pre/share/man/man5/cairn-job.5"
expect_grep module/system-man-pages-kept module.out "^system man pages: ([^ ]+) \1$"
expect_grep module/python module.out "^$pre/share/cairn/python/cairn_model.py$"
expect_grep module/share module.out "^share $pre/share/cairn$"
expect_eq module/counter-job "$(metric work/run/metrics.jsonl log result)" 145
expect_grep module/unloaded module.out "^unloaded$"

run uninstall make -s -C "$CAIRN_ROOT" uninstall PREFIX="$pre"
expect_rc uninstall/rc uninstall 0
expect_eq uninstall/exactly "$(cd "$pre" && find . | sort | tr '\n' ' ')" ". ./bin ./bin/other ./share ./share/man ./share/man/man1 ./share/man/man1/other.1 "
run again make -s -C "$CAIRN_ROOT" uninstall PREFIX="$pre"
expect_rc uninstall/twice-refused again 2
expect_grep uninstall/twice-says again.out "no cairn installed in $pre"
