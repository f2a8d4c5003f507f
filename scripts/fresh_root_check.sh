#!/usr/bin/env bash
# Does a fresh machine with only the README's prerequisites pass the README's test command?
# Builds a fresh Debian root with debootstrap (minbase: what a debian:bookworm container has),
# clones this repository into it, gives it only what the README's "Prerequisites:" line names
# (its apt-get command as written, and node 20 on PATH), and runs there, in a chroot, the
# README's test command (the second command at its top) exactly as the README writes it, at the
# lowest CPU priority. Not part of CI (it needs root and about 20 minutes to an hour); docs/fresh-root.md.
#
#   sudo scripts/fresh_root_check.sh                        # the whole suite, as written
#   sudo scripts/fresh_root_check.sh --first                # the README's first command too
#   sudo scripts/fresh_root_check.sh -- tests/report tests/cli   # only these (appended to it)
#
# Options (and environment variables):
#   --root DIR      where the root is built (FRESH_ROOT, default /var/tmp/lorelab-fresh-root);
#                   an existing root is used again only with --reuse, else it is rebuilt
#   --reuse         keep an existing root (and its packages: then it is no longer fresh)
#   --suite NAME    Debian suite (FRESH_SUITE, default bookworm: Python 3.11)
#   --mirror URL    Debian mirror (FRESH_MIRROR, default: the first URI apt uses here, else
#                   http://deb.debian.org/debian)
#   --node PATH     a node 20 binary to put on the root's PATH (FRESH_NODE, default: the node on
#                   this machine's PATH); Debian 12's own nodejs is 18, too old
#   --ca FILE       a CA bundle pip must trust in the root (FRESH_CA), for a machine whose HTTPS
#                   goes through an intercepting proxy; it is handed to pip as PIP_CERT and
#                   nothing else in the root changes
#   --ref REF       what to clone (FRESH_REF, default HEAD of this repository)
#   --first         also run the README's first command (before the test command)
#   -- ARGS         appended to the test command (pytest paths or options): a slice
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
root=${FRESH_ROOT:-/var/tmp/lorelab-fresh-root}
suite=${FRESH_SUITE:-bookworm}
mirror=${FRESH_MIRROR:-}
node=${FRESH_NODE:-$(command -v node || true)}
ca=${FRESH_CA:-}
ref=${FRESH_REF:-HEAD}
reuse=0
first=0
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --root) root=$2; shift 2 ;;
        --reuse) reuse=1; shift ;;
        --suite) suite=$2; shift 2 ;;
        --mirror) mirror=$2; shift 2 ;;
        --node) node=$2; shift 2 ;;
        --ca) ca=$2; shift 2 ;;
        --ref) ref=$2; shift 2 ;;
        --first) first=1; shift ;;
        --) shift; extra=("$@"); break ;;
        *) echo "fresh_root_check: unknown argument $1 (see the head of $0)" >&2; exit 2 ;;
    esac
done

say() { echo "fresh_root_check: $*" >&2; }
[ "$(id -u)" = 0 ] || { say "needs root (debootstrap, chroot, mount)"; exit 2; }
command -v debootstrap >/dev/null || { say "needs debootstrap: apt-get install -y debootstrap"; exit 2; }
[ -n "$node" ] && [ -x "$node" ] || { say "no node 20 binary: give one with --node PATH"; exit 2; }
case "$("$node" --version)" in
    v20.*) ;;
    *) say "$node is $("$node" --version), not node 20"; exit 2 ;;
esac
if [ -z "$mirror" ]; then
    mirror=$(grep -hoE '^(URIs:|deb) +https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
        /etc/apt/sources.list.d/*.list 2>/dev/null | grep -m1 -oE 'https?://[^ ]*debian[^ ]*' | grep -v security || true)
    mirror=${mirror:-http://deb.debian.org/debian}
fi

mounts=(dev/shm dev/pts dev sys proc "")
cleanup() {
    for m in "${mounts[@]}"; do
        while mountpoint -q "$root/$m"; do umount -l "$root/$m" || break; done
    done
}
trap cleanup EXIT

# 1. A fresh root.
if [ -e "$root/etc/os-release" ] && [ "$reuse" = 1 ]; then
    say "reusing $root (not fresh: it keeps what earlier runs installed)"
else
    cleanup
    if grep -qE " $root(/| )" /proc/self/mounts; then
        say "something is still mounted under $root: not removing it"
        exit 1
    fi
    rm -rf --one-file-system "$root"
    say "debootstrap --variant=minbase $suite $root $mirror"
    start=$(date +%s)
    nice -n 19 debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 \
        || { tail -n 20 "$root.debootstrap.log" >&2; say "debootstrap failed"; exit 1; }
    say "root built in $(($(date +%s) - start)) s"
    security=${mirror%/debian}/debian-security
    {
        echo "deb $mirror $suite main"
        echo "deb $mirror $suite-updates main"
        echo "deb $security $suite-security main"
    } >"$root/etc/apt/sources.list"
fi
# The root on itself first: then "/" in the chroot is a mount point, as a container's is, and
# bubblewrap can make it a slave mount (in a bare chroot it cannot: "Failed to make / slave").
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount -t devpts devpts "$root/dev/pts" -o newinstance,ptmxmode=0666
mount -t tmpfs shm "$root/dev/shm"
cp /etc/resolv.conf "$root/etc/resolv.conf"

env=(HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
if [ -n "$ca" ]; then
    cp "$ca" "$root/etc/fresh-root-ca.pem"
    env+=(PIP_CERT=/etc/fresh-root-ca.pem)
fi
inside() { nice -n 19 chroot "$root" /usr/bin/env -i "${env[@]}" /bin/bash -c "$1"; }

# 2. A clone, and only the prerequisites the README names: its "Prerequisites:" line's apt-get
# command as written (Python 3.11 is Debian 12's python3), and node 20 on PATH.
rm -rf --one-file-system "$root/root/lorelab"
git clone --quiet --no-local "$repo" "$root/root/lorelab"
git -C "$root/root/lorelab" checkout --quiet "$(git -C "$repo" rev-parse "$ref")"
say "cloned $(git -C "$root/root/lorelab" log --oneline -1)"
readme="$root/root/lorelab/README.md"
prerequisites=$(grep -m1 '^Prerequisites:' "$readme" | grep -oE '`apt-get [^`]*`' | tr -d '`' || true)
[ -n "$prerequisites" ] || { say "the README has no Prerequisites: line with an apt-get command"; exit 1; }
say "README prerequisites: $prerequisites; node 20 from $node"
inside "$prerequisites" >/dev/null
install -m 755 "$node" "$root/usr/local/bin/node"
inside 'python3 --version && node --version'

# 3. The README's commands as it writes them.
# The first two ```bash blocks of the README: its two top commands (one line each).
block() {
    awk -v want="$1" '/^```bash$/ {n++; inb = (n == want); next} /^```$/ {inb = 0} inb {print}' "$readme"
}
first_command=$(block 1)
test_command=$(block 2)
[ -n "$test_command" ] || { say "no test command found in the README"; exit 1; }
status=0
if [ "$first" = 1 ]; then
    say "README first command: $first_command"
    start=$(date +%s)
    inside "cd /root/lorelab && $first_command" || status=$?
    say "first command: exit $status after $(($(date +%s) - start)) s"
fi
command="$test_command${extra[*]:+ ${extra[*]}}"
say "README test command: $command"
start=$(date +%s)
code=0
inside "cd /root/lorelab && $command" || code=$?
say "test command: exit $code after $(($(date +%s) - start)) s"
[ "$status" = 0 ] && [ "$code" = 0 ]
