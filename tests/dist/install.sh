#!/usr/bin/env bash
# The service's files as cmake --install lays them out, and the unit and
# configuration themselves. Under the prefix /usr (into a DESTDIR) the
# Debian layout: /usr/bin/shmkvd, /etc/shmkv/shmkvd.conf,
# /lib/systemd/system/shmkvd.service, whose ExecStart names the first two;
# under another prefix, folders of it. systemd-analyze verify has nothing
# to say about the unit (run against a copy of the host's units, which it
# needs; skipped, saying so, where systemd is not installed). shmkvd
# starts with the shipped configuration, its data folder and socket moved
# into the test's folder, and answers. Needs no root.
#
# Usage: install.sh BUILD_DIR
set -euo pipefail

say() { echo "dist_install: $*"; }
fail() {
    echo "dist_install: FAIL: $*" >&2
    exit 1
}
[ $# -eq 1 ] || fail "usage: install.sh BUILD_DIR"
build=$(cd "$1" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shmkv-dist-install-$$-XXXXXX")
pid=
cleanup() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

# The Debian layout: prefix /usr, into a DESTDIR.
root=$tmp/root
DESTDIR=$root cmake --install "$build" --prefix /usr --component server >/dev/null
for f in usr/bin/shmkvd etc/shmkv/shmkvd.conf lib/systemd/system/shmkvd.service \
    usr/share/doc/shmkv/shmkv.conf; do
    [ -f "$root/$f" ] || fail "prefix /usr: no /$f"
done
unit=$root/lib/systemd/system/shmkvd.service
exec_start='ExecStart=/usr/bin/shmkvd /etc/shmkv/shmkvd.conf --supervised systemd --daemonize no'
grep -qxF "$exec_start" "$unit" || fail "prefix /usr: $(grep ExecStart= "$unit")"
grep -qxF 'ReadWritePaths=-/etc/shmkv' "$unit" || fail "prefix /usr: $(grep ReadWritePaths= "$unit")"
! grep -n '@' "$unit" || fail "prefix /usr: the unit keeps a placeholder (above)"
say "prefix /usr: /usr/bin/shmkvd, /etc/shmkv/shmkvd.conf, /lib/systemd/system/shmkvd.service"

# Another prefix keeps everything under it.
other=$tmp/other
cmake --install "$build" --prefix "$other" --component server >/dev/null
for f in bin/shmkvd etc/shmkv/shmkvd.conf lib/systemd/system/shmkvd.service; do
    [ -f "$other/$f" ] || fail "prefix $other: no $f"
done
grep -qxF "ExecStart=$other/bin/shmkvd $other/etc/shmkv/shmkvd.conf --supervised systemd --daemonize no" \
    "$other/lib/systemd/system/shmkvd.service" ||
    fail "prefix $other: $(grep ExecStart= "$other/lib/systemd/system/shmkvd.service")"
say "another prefix: all under it"

# systemd-analyze verify resolves the unit's dependencies (sysinit.target,
# ...) and ExecStart's binary under --root, so the root gets the host's
# units beside ours. It exits 0 on warnings: any output fails.
if command -v systemd-analyze >/dev/null && [ -d /lib/systemd/system ]; then
    cp -rn /lib/systemd/system/. "$root/lib/systemd/system/"
    out=$(systemd-analyze verify --root="$root" /lib/systemd/system/shmkvd.service 2>&1) ||
        fail "systemd-analyze verify: $out"
    [ -z "$out" ] || fail "systemd-analyze verify: $out"
    say "systemd-analyze verify: no finding"
else
    say "systemd-analyze verify SKIPPED: systemd is not installed (scripts/deps.sh installs it)"
fi

# The shipped configuration as shmkvd reads it: every directive accepted,
# the socket's mode applied. The paths it names are the service's, so
# the data folder and socket move here; TCP takes a port the kernel picks.
sock=$tmp/shmkv.sock
"$root/usr/bin/shmkvd" "$root/etc/shmkv/shmkvd.conf" --dir "$tmp/data" --unixsocket "$sock" \
    --port 0 >"$tmp/shmkvd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    [ -S "$sock" ] || ! kill -0 "$pid" 2>/dev/null && break
    sleep 0.1
done
[ -S "$sock" ] || { cat "$tmp/shmkvd.log" >&2; fail "shmkvd did not start with shmkvd.conf"; }
[ "$(redis-cli -s "$sock" ping)" = PONG ] || fail "no PONG"
[ "$(stat -c %a "$sock")" = 770 ] || fail "the socket's mode is $(stat -c %a "$sock"), not 770"
[ "$(redis-cli -s "$sock" config get supervised | tail -n 1)" = systemd ] || fail "supervised is not systemd"
redis-cli -s "$sock" shutdown >/dev/null 2>&1 || true
st=0
wait "$pid" || st=$?
pid=
[ "$st" -eq 0 ] || { cat "$tmp/shmkvd.log" >&2; fail "shmkvd exited with status $st"; }
say "shmkvd.conf: accepted, socket 770, supervised systemd"
