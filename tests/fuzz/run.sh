#!/usr/bin/env bash
# run.sh BUILD_DIR SECONDS [--out FILE] [TARGET ...] — runs each fuzz target
# of BUILD_DIR (configured with CC=clang -DSHMKV_FUZZ=ON) for SECONDS, on a
# copy of its seed corpus (tests/fuzz/corpus/TARGET, left as it is), under
# ASan and UBSan, one after the other. Prints a table: executions, rate,
# coverage (edges, features), corpus size, findings. A target that crashes,
# leaks, or hangs (20 s on one input) fails the run; its input is kept in
# $FUZZ_ARTIFACTS (default: the current folder) as crash-*, leak-* or
# timeout-*, to become a regression test. --out also writes the table to
# FILE (bench/results/fuzz.md for a long run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
secs=$2
shift 2
out=""
if [ "${1:-}" = --out ]; then
    out=$2
    shift 2
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_resp fuzz_restore fuzz_rdb fuzz_conf fuzz_shm fuzz_journal fuzz_lua)
artifacts=$(cd "${FUZZ_ARTIFACTS:-.}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/shmkv-fuzz-XXXXXX")
trap 'rm -rf "$work"' EXIT

rows=() failed=0
for t in "${targets[@]}"; do
    bin="$build/tests/fuzz/$t"
    [ -x "$bin" ] || { echo "run.sh: no $bin (cmake -DSHMKV_FUZZ=ON, target fuzz_targets)" >&2; exit 1; }
    mkdir -p "$work/$t"
    cp "$here/corpus/$t"/* "$work/$t"/
    seeds=$(ls "$here/corpus/$t" | wc -l)
    rc=0
    "$bin" "$work/$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=3072 -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="$artifacts/$t-" >"$work/$t.log" 2>&1 || rc=$?
    last=$(grep -E '^#[0-9]+' "$work/$t.log" | tail -n 1 || true) # none: it failed at once
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$t.log")
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$work/$t.log")
    found="none"
    if [ "$rc" -ne 0 ]; then
        found="FAILED (exit $rc): $(grep -m1 -E 'ERROR|SUMMARY|runtime error' "$work/$t.log" || echo see log)"
        failed=1
        tail -n 40 "$work/$t.log" >&2
    fi
    rows+=("| $t | $secs | ${execs:-?} | ${rate:-?} | ${cov:-?} | ${ft:-?} | $seeds → ${corp:-?} | ${rss:-?} | $found |")
    echo "run.sh: $t done: ${execs:-?} executions, cov ${cov:-?}, $found" >&2
done

{
    echo "| target | seconds | executions | exec/s | coverage (edges) | features | corpus (seeds → end) | peak RSS MB | findings |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
    printf '%s\n' "${rows[@]}"
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
exit "$failed"
