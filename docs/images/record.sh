#!/usr/bin/env bash
# Make the page screenshots in this directory again (docs/report.md, "Screenshots"): the default
# learning run (the README's command 1) and the conditions example, each rendered by
# `lorelab report` and shot by headless Chromium in a 1,400 px wide window. About four minutes
# on two idle cores. LORELAB and CHROMIUM name other binaries than the checkout's and the PATH's.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
lorelab="${LORELAB:-$repo/.venv/bin/lorelab}"
chromium="${CHROMIUM:-chromium}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
examples="$repo/examples/conditions"
# Relative output paths, so that each page's header reads "from out/...", as in the README.
cd "$work"

"$lorelab" eval learning --dataset default --agent fixture --output out/learning >/dev/null
"$lorelab" eval conditions run --manifest "$examples/conditions.json" --host fixture-host \
    --output out/cond --memory-home out/cond-home --seed-memory "$examples/memory_seed.json" \
    >/dev/null
"$lorelab" report out/learning >/dev/null
"$lorelab" report out/cond >/dev/null

shot() {
    "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,"$3" \
        --screenshot="$here/$1" "$work/$2" 2>/dev/null
}
shot report-learning.png out/learning/report.html 2000
shot report-conditions.png out/cond/report.html 2000
