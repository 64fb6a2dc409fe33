#!/usr/bin/env bash
# The README's flame-graph picture, made again from a bundled recording:
# `perfdata flamegraph` draws the SVG, headless Chromium takes its screenshot.
#
#   tools/readme-picture.sh            # writes docs/images/flamegraph.svg and .png
#   tools/readme-picture.sh DIR        # writes DIR/flamegraph.svg and .png instead
#
# The recording is samples/cpp_inline.dwarf.data (a --call-graph=dwarf profile of
# a C++ program: demangled templates, inlined frames, stacks down to _start).  Its
# libc frames are named from the machine's libc debug file (libc6-dbg) when that
# file has the recorded build-id; without it they read [unknown].  Needs perfdata
# on PATH (or python3 with this checkout) and chromium (Debian's `chromium`).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -le 1 ] || { echo "usage: $0 [DIR]" >&2; exit 2; }
mkdir -p "${1:-$top/docs/images}"
dir=$(cd "${1:-$top/docs/images}" && pwd)
cd "$top"
recording=samples/cpp_inline.dwarf.data
out=$dir/flamegraph

if command -v perfdata >/dev/null 2>&1; then
    perfdata=(perfdata)
else
    perfdata=(python3 cli.py)
fi
browser=
for name in chromium chromium-browser google-chrome; do
    if command -v "$name" >/dev/null 2>&1; then browser=$name; break; fi
done
[ -n "$browser" ] || { echo "$0: needs chromium (apt-get install chromium)" >&2; exit 2; }

"${perfdata[@]}" flamegraph "$recording" --debug-dir samples/buildids \
    -o "$out.svg"

# The screenshot is the SVG's own size: its root element's width and height.
read -r width height < <(python3 - "$out.svg" <<'EOF'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
print(int(float(root.get("width"))), int(float(root.get("height"))))
EOF
)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Chromium wants a profile directory it may write; --no-sandbox because root.
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$scratch" --window-size="$width,$height" \
    --screenshot="$scratch/shot.png" "file://$out.svg" >/dev/null 2>&1
[ -s "$scratch/shot.png" ] || { echo "$0: $browser made no screenshot" >&2; exit 1; }
mv "$scratch/shot.png" "$out.png"
echo "$out.png: ${width}x${height} from $recording"
