#!/usr/bin/env bash
# The Debian packages on a fresh Debian 12, with no systemd running:
# cpack -G DEB builds shmkv, libshmkv0 and libshmkv-dev from the build
# folder; debootstrap makes a minimal bookworm root (minbase, plus what the
# packages depend on) from the mirror the host's apt uses; dpkg installs the
# three in it. Then: the system user shmkv; the files where Debian puts
# them, with the owners and modes postinst records; the unit enabled;
# shmkvd --version inside the root; shmkvd started there as shmkv with the
# shipped configuration, answering on its socket in /run/shmkv with its
# journal in /dev/shm; a reinstall (the upgrade path) and a purge.
#
# Everything after the packages are built runs in a private mount and PID
# namespace, so every mount and process the test makes ends with it. Its
# folder, $TMPDIR/shmkv-dist-deb-PID-XXXXXX, is removed on exit, and one a
# killed run left is removed by the next. Bounded by SHMKV_DEB_TIMEOUT
# seconds (600). Needs root and the right to make namespaces and mount:
# without them it says so and exits 77, which ctest counts as skipped.
#
# Usage: deb.sh BUILD_DIR
set -euo pipefail

say() { echo "dist_deb: $*"; }
fail() {
    echo "dist_deb: FAIL: $*" >&2
    exit 1
}

# ---- inside the namespaces: deb.sh --inside TMP MIRROR ----
if [ "${1:-}" = --inside ]; then
    tmp=$2 mirror=$3
    root=$tmp/root
    cd "$tmp"
    debs=(pkg/*.deb)
    # Every dependency of the three but themselves, first alternatives,
    # without versions: debootstrap installs them, so that dpkg -i checks
    # that the Depends fields hold on bookworm.
    deps=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Depends; echo; done |
        tr ',' '\n' | sed -E 's/\|.*//; s/\(.*\)//; s/[[:space:]]//g' |
        grep -vxE 'shmkv|libshmkv0|libshmkv-dev|' | sort -u | paste -sd, -)
    say "debootstrap --variant=minbase --include=$deps bookworm from $mirror"
    if ! debootstrap --variant=minbase --include="$deps" bookworm "$root" "$mirror" >debootstrap.log 2>&1; then
        tail -n 20 debootstrap.log >&2
        fail "debootstrap failed (above: the end of its log)"
    fi
    # What the packages find on a booted host without systemd: /proc,
    # /sys, and /dev/shm, a tmpfs, where shmkvd keeps its journal.
    mount -t proc proc "$root/proc"
    mount -t sysfs sysfs "$root/sys"
    mount -t tmpfs -o mode=1777,size=1g tmpfs "$root/dev/shm"
    in_root() { chroot "$root" "$@"; }

    [ ! -e "$root/run/systemd/system" ] || fail "the new root looks booted under systemd"
    mkdir -p "$root/tmp/pkg"
    cp "${debs[@]}" "$root/tmp/pkg/"
    server=/tmp/pkg/$(basename pkg/shmkv_*.deb)
    in_root dpkg -i "$server" "/tmp/pkg/$(basename pkg/libshmkv0_*.deb)" \
        "/tmp/pkg/$(basename pkg/libshmkv-dev_*.deb)" >dpkg.log 2>&1 ||
        { cat dpkg.log >&2; fail "dpkg -i failed"; }
    say "installed: $(in_root dpkg-query -W -f='${Package} ${Version}\n' shmkv libshmkv0 libshmkv-dev | paste -sd, -)"

    # The user: a system user, so logind's RemoveIPC leaves its /dev/shm be.
    pw=$(in_root getent passwd shmkv) || fail "no user shmkv"
    IFS=: read -r _ _ uid gid _ home shell <<<"$pw"
    [ "$uid" -gt 0 ] && [ "$uid" -lt 1000 ] || fail "shmkv has uid $uid, not a system uid (1-999)"
    [ "$(in_root getent group shmkv | cut -d: -f3)" = "$gid" ] || fail "shmkv's group is not shmkv"
    [ "$home" = /var/lib/shmkv ] || fail "shmkv's home is $home"
    [ "$shell" = /usr/sbin/nologin ] || fail "shmkv's shell is $shell"
    say "user: $pw"

    # The layout, owners and modes (numbers: the host's names differ).
    owner() { stat -c '%u:%g %a' "$root$1"; }
    me="$uid:$gid"
    [ -x "$root/usr/bin/shmkvd" ] || fail "no /usr/bin/shmkvd"
    [ "$(owner /etc/shmkv)" = "$me 750" ] || fail "/etc/shmkv is $(owner /etc/shmkv)"
    [ "$(owner /etc/shmkv/shmkvd.conf)" = "$me 600" ] ||
        fail "/etc/shmkv/shmkvd.conf is $(owner /etc/shmkv/shmkvd.conf)"
    [ "$(owner /var/lib/shmkv)" = "$me 700" ] || fail "/var/lib/shmkv is $(owner /var/lib/shmkv)"
    [ -f "$root/usr/share/doc/shmkv/shmkv.conf" ] || fail "no /usr/share/doc/shmkv/shmkv.conf"
    unit=$root/lib/systemd/system/shmkvd.service
    [ -f "$unit" ] || fail "no /lib/systemd/system/shmkvd.service"
    grep -qx 'ExecStart=/usr/bin/shmkvd /etc/shmkv/shmkvd.conf --supervised systemd --daemonize no' "$unit" ||
        fail "the unit's ExecStart: $(grep ExecStart= "$unit")"
    # grep reads all (no -q): under pipefail, a writer cut short by SIGPIPE fails.
    in_root dpkg-query -W -f='${Conffiles}\n' shmkv | grep '^ /etc/shmkv/shmkvd.conf ' >/dev/null ||
        fail "/etc/shmkv/shmkvd.conf is not a conffile"
    wants=$root/etc/systemd/system/multi-user.target.wants/shmkvd.service
    [ "$(readlink "$wants")" = /lib/systemd/system/shmkvd.service ] || fail "the unit is not enabled"
    in_root ldconfig -p | grep 'libshmkv\.so\.0 ' >/dev/null || fail "ldconfig does not know libshmkv.so.0"
    [ -f "$root/usr/include/shmkv.h" ] && [ -f "$root/usr/lib/pkgconfig/shmkv.pc" ] ||
        fail "libshmkv-dev's files are missing"
    say "layout: binary, configuration, unit (enabled), data folder, library and header in place"

    version=$(in_root /usr/bin/shmkvd --version) || fail "shmkvd --version failed in the root"
    [[ $version == "shmkvd v=$SHMKV_VERSION "* ]] || fail "shmkvd --version says: $version"
    say "in the root: $version"

    # shmkvd as the unit runs it: user shmkv, umask 077, /run/shmkv made
    # as RuntimeDirectory= makes it, the shipped configuration (TCP on a
    # port the kernel picks, so as not to meet another server's).
    install -d -o "$uid" -g "$gid" -m 0750 "$root/run/shmkv"
    (umask 077 && exec chroot --userspec="$uid:$gid" "$root" /usr/bin/shmkvd /etc/shmkv/shmkvd.conf \
        --supervised systemd --daemonize no --port 0) >shmkvd.log 2>&1 &
    pid=$!
    sock=$root/run/shmkv/shmkv.sock
    for _ in $(seq 100); do
        [ -S "$sock" ] || ! kill -0 "$pid" 2>/dev/null && break
        sleep 0.1
    done
    [ -S "$sock" ] || { cat shmkvd.log >&2; fail "shmkvd did not open $sock"; }
    cli() { redis-cli -s "$sock" "$@"; }
    [ "$(cli ping)" = PONG ] || fail "no PONG"
    [ "$(cli set greeting hello)" = OK ] && [ "$(cli get greeting)" = hello ] || fail "SET/GET failed"
    [ "$(owner /run/shmkv/shmkv.sock)" = "$me 770" ] ||
        fail "the socket is $(owner /run/shmkv/shmkv.sock)"
    jdir=$(cli info persistence | tr -d '\r' | sed -n 's/^writeback_journal_dir://p')
    [[ $jdir == /dev/shm/shmkv-journal-* ]] || fail "the journal is in '$jdir', not /dev/shm"
    [ "$(owner "$jdir")" = "$me 700" ] || fail "the journal folder is $(owner "$jdir")"
    cli shutdown >/dev/null 2>&1 || true
    st=0
    wait "$pid" || st=$?
    [ "$st" -eq 0 ] || { cat shmkvd.log >&2; fail "shmkvd exited with status $st"; }
    [ ! -e "$root$jdir" ] || fail "a clean stop left the journal $jdir"
    say "shmkvd ran as shmkv: socket 770 in /run/shmkv, journal in $jdir, removed at stop"

    # The upgrade path (postinst configure with the old version), then purge.
    in_root dpkg -i "$server" >dpkg.log 2>&1 || { cat dpkg.log >&2; fail "reinstall failed"; }
    [ "$(owner /etc/shmkv/shmkvd.conf)" = "$me 600" ] || fail "a reinstall lost the conf's owner"
    in_root dpkg --purge libshmkv-dev libshmkv0 shmkv >dpkg.log 2>&1 || { cat dpkg.log >&2; fail "purge failed"; }
    [ ! -e "$root/etc/shmkv" ] || fail "purge left /etc/shmkv"
    [ ! -e "$wants" ] || fail "purge left the unit enabled"
    [ -z "$(in_root dpkg-statoverride --list)" ] || fail "purge left statoverrides"
    in_root getent passwd shmkv >/dev/null || fail "purge removed the user shmkv (it owns kept data)"
    say "reinstall kept the owners; purge removed configuration, enablement and overrides"
    exit 0
fi

# ---- outside ----
[ $# -eq 1 ] || fail "usage: deb.sh BUILD_DIR"
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
self=$src/tests/dist/deb.sh
skip() {
    echo "dist_deb: SKIPPED: $*"
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot, dpkg in the new root)"
for t in cpack dpkg-deb dpkg-shlibdeps file debootstrap unshare chroot timeout redis-cli apt-get; do
    command -v "$t" >/dev/null || fail "$t is missing: scripts/deps.sh installs it"
done

# Folders of killed runs first: those whose process is gone.
tmproot=${TMPDIR:-/tmp}
for d in "$tmproot"/shmkv-dist-deb-*-??????; do
    [ -d "$d" ] && [ ! -e "$d/kept-for-a-look" ] || continue
    p=${d%-??????}
    p=${p##*-}
    kill -0 "$p" 2>/dev/null || rm -rf --one-file-system "$d"
done
tmp=$(mktemp -d "$tmproot/shmkv-dist-deb-$$-XXXXXX")
cleanup() {
    if [ -n "${SHMKV_TEST_KEEP:-}" ]; then
        touch "$tmp/kept-for-a-look"
        say "kept $tmp"
    else
        rm -rf --one-file-system "$tmp"
    fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

# Can this process make a mount namespace and mount in it? Not in a
# container without CAP_SYS_ADMIN, for one.
mkdir "$tmp/probe"
unshare --mount --pid --fork --kill-child --propagation private \
    mount -t tmpfs none "$tmp/probe" 2>/dev/null ||
    skip "cannot make a private mount and PID namespace and mount in it"

# The mirror the host's apt takes bookworm from (its sources.list files),
# and its proxy, if any.
mirror=${SHMKV_DEB_MIRROR:-$(apt-get indextargets --no-release-info --format '$(REPO_URI)' \
    'Release: bookworm' 'Identifier: Packages' 'Component: main' | head -n 1)}
[ -n "$mirror" ] || fail "the host's apt sources have no bookworm main (set SHMKV_DEB_MIRROR)"
eval "$(apt-config shell http_proxy Acquire::http::Proxy)"
[ -z "${http_proxy:-}" ] || export http_proxy

say "cpack -G DEB"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1 ||
    { tail -n 20 "$tmp/cpack.log" >&2; fail "cpack failed"; }
ls "$tmp"/pkg/shmkv_*.deb "$tmp"/pkg/libshmkv0_*.deb "$tmp"/pkg/libshmkv-dev_*.deb >/dev/null ||
    fail "cpack did not make the three packages"
SHMKV_VERSION=$(dpkg-deb -f "$tmp"/pkg/shmkv_*.deb Version)
export SHMKV_VERSION

status=0
timeout --kill-after=10 "${SHMKV_DEB_TIMEOUT:-600}" \
    unshare --mount --pid --fork --kill-child --propagation private \
    "$self" --inside "$tmp" "$mirror" || status=$?
[ "$status" -ne 124 ] || fail "over ${SHMKV_DEB_TIMEOUT:-600} s (SHMKV_DEB_TIMEOUT)"
exit "$status"
