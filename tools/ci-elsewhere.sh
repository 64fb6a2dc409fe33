#!/usr/bin/env bash
# Run .ci/run as on a user's machine: a fresh clone of HEAD in a temporary
# folder, a fresh virtualenv, and this checkout hidden under an empty tmpfs
# (unshare -m: only this command sees it), so that no test passes because the
# developer's checkout sits where the bundled recordings were made.
#
#   tools/ci-elsewhere.sh                 # as CI: the shared corpus beside the clone if here
#   tools/ci-elsewhere.sh --other-kernel  # also hide the running kernel's symbols
#                                         # (/proc/kallsyms empty, another build-id in
#                                         # /sys/kernel/notes): nothing may need them
#   tools/ci-elsewhere.sh --no-corpus     # without ../shared (its tests skip)
#   tools/ci-elsewhere.sh --no-debuginfo  # /usr/lib/debug empty (no libc6-dbg): the
#                                         # goldens that need it must skip, saying so
#
# Needs root (mount namespaces).  Prints .ci/run's output; exits with its status.
set -euo pipefail
top=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
other_kernel=no corpus=yes debuginfo=yes
for arg in "$@"; do
    case $arg in
        --other-kernel) other_kernel=yes ;;
        --no-corpus) corpus=no ;;
        --no-debuginfo) debuginfo=no ;;
        *) echo "usage: $0 [--other-kernel] [--no-corpus] [--no-debuginfo]" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "$0: needs root (unshare -m)" >&2; exit 2; }
[ -z "$(git -C "$top" status --porcelain --untracked-files=no)" ] ||
    echo "$0: note: uncommitted changes are not part of the clone" >&2

work=$(mktemp -d /tmp/ci-elsewhere.XXXXXX)
trap 'rm -rf "$work"' EXIT
git clone -q "$top" "$work/p"
if [ $corpus = yes ] && [ -d "$top/../shared" ]; then
    ln -s "$(cd "$top/../shared" && pwd)" "$work/shared"
fi
python3 -m venv "$work/venv"

# A kernel build-id note that is not this kernel's (the notes' layout, an
# all-0x5a build-id), and an empty kallsyms.
printf '\004\000\000\000\024\000\000\000\003\000\000\000GNU\000' > "$work/notes"
head -c 20 /dev/zero | tr '\0' '\132' >> "$work/notes"
: > "$work/kallsyms"

echo "ci-elsewhere: clone in $work/p, $top hidden, other kernel: $other_kernel," \
     "debuginfo: $debuginfo" >&2
unshare -m bash -c '
    set -e
    mount -t tmpfs none "$1"
    if [ "$2" = yes ]; then
        mount --bind "$3/kallsyms" /proc/kallsyms
        mount --bind "$3/notes" /sys/kernel/notes
    fi
    [ "$4" = yes ] || mount -t tmpfs none /usr/lib/debug
    . "$3/venv/bin/activate"
    export HOME="$3/home"         # no ~/.debug, no ~/.cache/perfdata of the developer
    mkdir -p "$HOME"
    cd "$3/p"
    bash .ci/run
' ci-elsewhere "$top" "$other_kernel" "$work" "$debuginfo"
