#!/usr/bin/env bash
# Install the peer memory servers the shipped profiles describe into DIR, then use them with
#   LORELAB_PEERS=DIR lorelab eval conditions run ... --memory-profile PROFILE --home HOME
# Usage: scripts/install_peers.sh DIR [NAME...]
#   NAME: server-memory, memorix, memory-keeper, basic-memory (default: all four).
# npm peers go to DIR/node_modules (memorix and memory-keeper build better-sqlite3: minutes).
# basic-memory needs Python >= 3.12: python3.12 on PATH, else pyenv's newest 3.12; it goes to
# DIR/basic-memory-venv. Without a Python 3.12 it says so and exits 1 (the others stay).
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 DIR [server-memory|memorix|memory-keeper|basic-memory ...]" >&2
    exit 2
fi
dir=$1
shift
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(server-memory memorix memory-keeper basic-memory)
npm_packages=()
want_basic=0
for name in "${names[@]}"; do
    case "$name" in
        server-memory) npm_packages+=("@modelcontextprotocol/server-memory@2026.8.31") ;;
        memorix) npm_packages+=("memorix@1.0.7") ;;
        memory-keeper) npm_packages+=("mcp-memory-keeper@0.14.1") ;;
        basic-memory) want_basic=1 ;;
        *) echo "$0: unknown peer $name" >&2; exit 2 ;;
    esac
done
mkdir -p "$dir"
if [ ${#npm_packages[@]} -gt 0 ]; then
    command -v npm >/dev/null 2>&1 || { echo "$0: npm is not on PATH" >&2; exit 1; }
    npm install --silent --no-audit --no-fund --prefix "$dir" "${npm_packages[@]}"
fi
if [ "$want_basic" = 1 ]; then
    # python3.12 on PATH may be a pyenv shim that no active version backs: try each candidate.
    python=""
    candidates=("$(command -v python3.12 || true)")
    if [ -d "${PYENV_ROOT:-$HOME/.pyenv}/versions" ]; then
        newest=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12* 2>/dev/null | sort -V | tail -1)
        [ -n "$newest" ] && candidates+=("$newest/bin/python3.12")
    fi
    for candidate in "${candidates[@]}"; do
        if [ -n "$candidate" ] && "$candidate" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null; then
            python=$candidate
            break
        fi
    done
    if [ -z "$python" ]; then
        echo "$0: basic-memory needs Python >= 3.12 and none was found (no working python3.12 on PATH, no pyenv 3.12); install one (apt install python3.12 or pyenv install 3.12) and run again" >&2
        exit 1
    fi
    "$python" -m venv "$dir/basic-memory-venv"
    "$dir/basic-memory-venv/bin/pip" install --quiet "basic-memory==0.24.1"
fi
echo "peers installed in $dir; use LORELAB_PEERS=$dir"
