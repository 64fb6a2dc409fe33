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
#   tools/ci-elsewhere.sh --debootstrap   # a stock Debian 12: the README's two set-up
#                                         # commands as written, in a minimal root
#                                         # with only python3, python3-venv and git
#   tools/ci-elsewhere.sh --debootstrap --ci       # .ci/run itself in that root: it
#                                         # installs every tool, then runs the tests
#   tools/ci-elsewhere.sh --debootstrap --rebuild  # debootstrap the root again
#
# The Debian root is made once with debootstrap (the mirror of this machine's
# apt sources) and kept in $PERFDATA_CI_ROOT (/var/cache/perfdata-ci/bookworm);
# each run works on an overlay of it, so the kept root stays as debootstrap left
# it.  /proc, /sys, /dev and resolv.conf are bound in (pip reaches PyPI), and the
# root is the root of a mount namespace of its own (pivot_root).
#
# Needs root (mount namespaces).  Prints .ci/run's output; exits with its status
# (--debootstrap: with the failed command's, 0 when every one passed).
set -euo pipefail
top=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
other_kernel=no corpus=yes debuginfo=yes debootstrap=no rebuild=no ci=no
for arg in "$@"; do
    case $arg in
        --other-kernel) other_kernel=yes ;;
        --no-corpus) corpus=no ;;
        --no-debuginfo) debuginfo=no ;;
        --debootstrap) debootstrap=yes ;;
        --rebuild) rebuild=yes ;;
        --ci) ci=yes ;;
        *) echo "usage: $0 [--other-kernel] [--no-corpus] [--no-debuginfo]" \
                "| --debootstrap [--ci] [--rebuild]" >&2; exit 2 ;;
    esac
done
if [ $debootstrap = no ] && { [ $rebuild = yes ] || [ $ci = yes ]; }; then
    echo "$0: --ci and --rebuild go with --debootstrap" >&2; exit 2
fi
[ "$(id -u)" = 0 ] || { echo "$0: needs root (unshare -m)" >&2; exit 2; }
[ -z "$(git -C "$top" status --porcelain --untracked-files=no)" ] ||
    echo "$0: note: uncommitted changes are not part of the clone" >&2

# The ```sh block right after `<!-- NAME -->` in the README (as .ci/run reads it).
readme_command() {
    awk -v marker="<!-- $1 -->" 'inside && /^```$/ { exit }
        inside { print }
        marked { inside = ($0 == "```sh"); marked = 0 }
        $0 == marker { marked = 1 }' "$top/README.md"
}

# This machine's Debian mirror for SUITE (deb822 .sources or one-line lists).
apt_mirror() {
    python3 - "$1" <<'PY'
import glob, re, sys
suite = sys.argv[1]
files = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*"))
for path in files:
    try:
        text = open(path).read()
    except OSError:
        continue
    if path.endswith(".sources"):
        for stanza in re.split(r"\n\s*\n", text):
            fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, re.M))
            if suite in fields.get("Suites", "").split() and fields.get("URIs"):
                print(fields["URIs"].split()[0]); sys.exit()
    else:
        for line in text.splitlines():
            words = re.sub(r"\[.*?\]", "", line).split()
            if len(words) >= 3 and words[0] == "deb" and words[2] == suite:
                print(words[1]); sys.exit()
sys.exit(1)
PY
}

if [ $debootstrap = yes ]; then
    command -v debootstrap >/dev/null || { echo "$0: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
    cached=${PERFDATA_CI_ROOT:-/var/cache/perfdata-ci/bookworm}
    mirror=$(apt_mirror bookworm || echo http://deb.debian.org/debian)
    security=$(apt_mirror bookworm-security || echo http://deb.debian.org/debian-security)
    if [ $rebuild = yes ]; then rm -rf "$cached"; fi
    if [ ! -x "$cached/usr/bin/git" ]; then
        rm -rf "$cached.new"
        mkdir -p "$(dirname "$cached")"
        echo "ci-elsewhere: debootstrap bookworm from $mirror into $cached" >&2
        t0=$SECONDS
        # In a mount namespace of its own: the /proc debootstrap mounts in the
        # root goes with it, even when it fails half-way.
        unshare -m debootstrap --variant=minbase --include=python3,python3-venv,git \
            bookworm "$cached.new" "$mirror" > "$cached.new.log" 2>&1 ||
            { tail -20 "$cached.new.log" >&2; echo "$0: debootstrap failed" >&2; exit 1; }
        # Updates and security fixes, as a Debian 12 machine has them.
        printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
            "$mirror" "$mirror" "$security" > "$cached.new/etc/apt/sources.list"
        chroot "$cached.new" apt-get clean
        mv "$cached.new" "$cached"
        rm -f "$cached.new.log"
        echo "ci-elsewhere: root made in $((SECONDS - t0)) s ($(du -sh "$cached" | cut -f1))" >&2
    fi
    setup_command=$(readme_command setup-command)
    test_command=$(readme_command test-command)
    [ -n "$setup_command" ] && [ -n "$test_command" ] ||
        { echo "$0: README.md lacks the setup-command or test-command block" >&2; exit 1; }
    work=$(mktemp -d /tmp/ci-debootstrap.XXXXXX)
    trap 'rm -rf "$work"' EXIT
    echo "ci-elsewhere: Debian 12 root $cached (overlay in $work), ci: $ci" >&2
    unshare -m bash -c '
        set -euo pipefail
        cached=$1 work=$2 top=$3 ci=$4 setup_command=$5 test_command=$6
        r=$work/root
        mkdir -p "$work/upper" "$work/overlay-work" "$r"
        mount -t overlay overlay \
            -o "lowerdir=$cached,upperdir=$work/upper,workdir=$work/overlay-work" "$r"
        for fs in proc sys dev; do mount --rbind "/$fs" "$r/$fs"; done
        rm -f "$r/etc/resolv.conf"; touch "$r/etc/resolv.conf"
        mount --bind "$(readlink -f /etc/resolv.conf)" "$r/etc/resolv.conf"
        # Where this machine reaches PyPI through a TLS-intercepting proxy, the
        # root trusts what this machine trusts (the CA bundle pip is given here).
        ca_env=()
        host_ca=${PIP_CERT:-${REQUESTS_CA_BUNDLE:-${SSL_CERT_FILE:-}}}
        if [ -n "$host_ca" ] && [ -f "$host_ca" ]; then
            mkdir -p "$r/etc/ssl"; touch "$r/etc/ssl/host-ca.crt"
            mount --bind -o ro "$host_ca" "$r/etc/ssl/host-ca.crt"
            ca_env=(PIP_CERT=/etc/ssl/host-ca.crt REQUESTS_CA_BUNDLE=/etc/ssl/host-ca.crt
                    SSL_CERT_FILE=/etc/ssl/host-ca.crt)
        fi
        # Each command in a clone of its own: neither relies on the other.
        run() {     # run NAME COMMAND: in /root/NAME/perfdata, as a login shell would
            local name=$1 command=$2 t0=$SECONDS status=0
            git clone -q "$top" "$r/root/$name/perfdata"
            if [ "$name" = ci ] && [ -d "$top/../shared" ]; then   # the corpus, as CI has it
                mkdir -p "$r/root/$name/shared"
                mount --bind -o ro "$top/../shared" "$r/root/$name/shared"
            fi
            echo "ci-elsewhere: [$name] $command" >&2
            # The root is made the root of a mount namespace (pivot_root, not
            # chroot): perf, entering a container'"'"'s namespace (setns) to read
            # its files, then lands in the Debian root, as on a machine of its
            # own, not in this one.  pipefail: `perfdata ... | head` fails when
            # perfdata does.
            unshare -m sh -c '"'"'cd "$1" && mkdir -p .oldroot && pivot_root . .oldroot &&
                cd / && umount -l /.oldroot && shift && exec "$@"'"'"' sh "$r" \
                /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb "${ca_env[@]}" \
                PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
                bash -o pipefail -c "cd /root/$name/perfdata && $command" </dev/null || status=$?
            if [ $status = 0 ]; then verdict=PASS; else verdict="FAIL (exit $status)"; fi
            echo "ci-elsewhere: [$name] $verdict in $((SECONDS - t0)) s" >&2
            echo "$name $status $((SECONDS - t0))" >> "$work/results"
        }
        if [ "$ci" = yes ]; then
            run ci "bash .ci/run"
        else
            run setup "$setup_command"
            run test "$test_command"
        fi
    ' ci-elsewhere "$cached" "$work" "$top" "$ci" "$setup_command" "$test_command"
    echo "ci-elsewhere: summary (command, exit status, seconds):" >&2
    sed 's/^/  /' "$work/results" >&2
    status=$(awk '$2 != 0 { print $2; exit }' "$work/results")
    exit "${status:-0}"
fi

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
    # These modes hide what some tests need on purpose: those skip, saying
    # why, and the skip gate of .ci/run is off.
    if [ "$2" = yes ] || [ "$4" = no ]; then export PERFDATA_SKIP_GATE=0; fi
    . "$3/venv/bin/activate"
    # Toolchains installed under HOME (rustup) stay reachable: tools, not state.
    [ -d "$HOME/.rustup" ] && export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
    [ -d "$HOME/.cargo" ] && export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
    export HOME="$3/home"         # no ~/.debug, no ~/.cache/perfdata of the developer
    mkdir -p "$HOME"
    cd "$3/p"
    bash .ci/run
' ci-elsewhere "$top" "$other_kernel" "$work" "$debuginfo"
