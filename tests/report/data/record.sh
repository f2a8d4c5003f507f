#!/usr/bin/env bash
# Record the report tests' output directories again (see README.md), into DEST (default: this
# directory). Run it from a checkout nobody edits meanwhile: identity checks hash lorelab's
# sources, and an edit during a run fails its worker calls.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
lorelab="${LORELAB:-$repo/.venv/bin/lorelab}"
dest="${DEST:-$here}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$repo"

"$lorelab" eval learning run --dataset default --agent fixture --seed 7 --output "$work/learning" >/dev/null
# Every trial fails for one cause: the worker prints no JSON (exit 1 is that run's outcome).
"$lorelab" eval learning run --dataset default --agent '["python3", "-c", "print(\"not json\")"]' \
    --repeat 1 --seed 7 --output "$work/learning-failed" >/dev/null 2>&1 || test $? -eq 1

conditions=(eval conditions run --manifest examples/conditions/conditions.json --host fixture-host
            --seed-memory examples/conditions/memory_seed.json)
"$lorelab" "${conditions[@]}" --output "$work/conditions" --home "$work/home" >/dev/null

# Every run's host fails for one cause: it prints no JSON (exit 1 is that run's outcome).
"$lorelab" eval conditions run --manifest examples/conditions/conditions.json \
    --host '["python3", "-c", "print(\"not json\")"]' \
    --seed-memory examples/conditions/memory_seed.json --output "$work/conditions-failed" \
    --home "$work/home3" >/dev/null 2>&1 || test $? -eq 1

# The same run, stopped with SIGTERM once 39 of its 52 runs are written.
"$lorelab" "${conditions[@]}" --output "$work/aborted" --home "$work/home2" >/dev/null 2>&1 &
pid=$!
until [ "$(find "$work/aborted/runs" -name '*.json' 2>/dev/null | wc -l)" -ge 39 ]; do sleep 0.2; done
kill -TERM "$pid"
wait "$pid" || true
test -f "$work/aborted/aborted.json"

rm -rf "$work"/learning*/memory-frozen.sqlite "$work"/learning*/ground-truth \
    "$work/learning-failed/private"
for name in learning learning-failed conditions conditions-failed; do rm -rf "${dest:?}/$name"; cp -r "$work/$name" "$dest/$name"; done
rm -rf "${dest:?}/conditions-aborted"
cp -r "$work/aborted" "$dest/conditions-aborted"
chmod -R u+rwX,go+rX "$dest"
