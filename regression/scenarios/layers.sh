# The tree shows the architecture: each folder of src/ includes only the
# public headers of its own layer and the layers before it (base, embed,
# job, ckpt, runtime, train, app), and a private header only from its folder.
. "$(dirname "$0")/../lib.sh"
enter
cd "$CAIRN_ROOT" || exit 1
layers="base embed job ckpt runtime train app"
# the layer of each public header
declare -A of=(
    [arena]=base [checksum]=base [clock]=base [clones]=base [coll]=base [diag]=base [error]=base [fault]=base [sort]=base
    [fsx]=base [h5util]=base [partition]=base [preempt]=base [rng]=base [runlog]=base
    [slurm]=base [strbuf]=base [tensor]=base [version]=base [watchdog]=base [numtext]=base
    [iodefer]=base [liveness]=base [reader]=base [cmdline]=base
    [analyze]=job [cfg]=job [config]=job [ext]=job [job]=job [op]=job [plan]=job [placement]=job [print]=job
    [ckpt_file]=ckpt [ckpt_index]=ckpt [ckpt_local]=ckpt [ckpt_tier]=ckpt
    [ckpt]=runtime [ckpt_bg]=runtime [exec]=runtime [layout]=runtime [runner]=runtime
    [runtime]=runtime [workspace]=runtime [guard]=runtime [progress]=runtime [blas_kernel]=runtime
    [embed_ids]=embed [optim]=embed [sparse_rows]=embed [embed_bag]=embed
    [infer]=train [lm]=train [model]=train [nn]=train [scalapack]=train [train]=train [train_spec]=train [trainplan]=train
    [cli]=app [datagen]=app [dataimport]=app
)
rank() { local i=0 l; for l in $layers; do [ "$l" = "$1" ] && echo $i && return; i=$((i + 1)); done; echo 99; }
bad=0
for h in include/cairn/*.h; do
    n=$(basename "$h" .h)
    [ -n "${of[$n]:-}" ] || { fail "header/$n" "include/cairn/$n.h has no layer in layers.sh"; bad=1; }
done
for f in src/*/*.[ch]; do
    dir=$(basename "$(dirname "$f")")
    mine=$(rank "$dir")
    [ "$mine" = 99 ] && { fail "folder/$dir" "$f: src/$dir is no layer"; bad=1; continue; }
    while read -r inc; do
        case $inc in
        cairn/*)
            n=$(basename "$inc" .h)
            r=$(rank "${of[$n]:-none}")
            if [ "$r" -gt "$mine" ]; then
                fail "layering/$f" "$f ($dir) includes $inc (${of[$n]:-no layer})"
                bad=1
            fi
            ;;
        */*)
            d=${inc%%/*}
            if [ "$d" != "$dir" ]; then
                fail "private/$f" "$f includes $inc, private to src/$d"
                bad=1
            fi
            ;;
        esac
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done
[ $bad = 0 ] && pass layering/each-folder-uses-only-lower-layers
# and the generic layers name no extension
names=$(grep -lE 'train_spec|trainplan|struct trainer|train_ext|embed_|struct emb\b|sparse_rows' src/base/* src/job/* src/ckpt/* src/runtime/*)
[ -z "$names" ] && pass core/names-no-extension || fail core/names-no-extension "$names"
# the front end names no extension's command: they register (ext_def.commands)
cmds=$(grep -nE '"(grads|eval|predict|generate|balance)"' src/app/*.c)
[ -z "$cmds" ] && pass core/cli-names-no-extension-command || fail core/cli-names-no-extension-command "$cmds"
