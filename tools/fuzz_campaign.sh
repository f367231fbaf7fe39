#!/usr/bin/env bash
# The fuzz campaign (docs/limits.md#fuzzing): every cargo-fuzz target of `fuzz/` and
# `hef/fuzz/` for RUNS runs under a 4 GB limit, starting from its committed seeds, and a
# table row per target with what libFuzzer counted.
#
#   tools/fuzz_campaign.sh [RUNS] [JOBS]     # defaults: 10000000 runs, 2 targets at a time
#
# The build is cargo-fuzz's release build (`-O`), as users run the code. SANITIZER=address
# builds with AddressSanitizer (about 5 to 20 times slower here), ASSERTIONS=1 with debug
# assertions and overflow checks; TARGETS="rig_config pose_json" runs a subset; WORK=DIR
# holds the corpora, logs and crashes (default target/fuzz-campaign); CORPUS=1 merges what a
# target reached into its committed seeds (`fuzz/seeds/`, `hef/fuzz/seeds/`): one input for
# each coverage edge they do not cover yet. Stable Rust builds it with RUSTC_BOOTSTRAP=1
# (cargo-fuzz asks for nightly's flags).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
runs=${1:-10000000}
parallel=${2:-2}
sanitizer=${SANITIZER:-none}
flags=(-O -s "$sanitizer")
[ "${ASSERTIONS:-0}" = 1 ] && flags+=(-a)
work=${WORK:-$root/target/fuzz-campaign}
read -r -a targets <<<"${TARGETS:-rig_config calibration mcap_replay pose_json zenoh_message from_bytes}"

command -v cargo-fuzz >/dev/null || {
  echo "cargo-fuzz is not installed: cargo install cargo-fuzz" >&2
  exit 2
}
mkdir -p "$work"

crate_of() {
  case $1 in
    from_bytes) echo hef/fuzz ;;
    *) echo fuzz ;;
  esac
}

for crate in fuzz hef/fuzz; do
  (cd "$crate" && RUSTC_BOOTSTRAP=1 nice cargo fuzz build "${flags[@]}" \
    --target-dir "$work/build-$sanitizer" >"$work/build-${crate//\//-}.log" 2>&1) || {
    echo "building $crate failed: $work/build-${crate//\//-}.log" >&2
    exit 1
  }
done
bin_dir=$work/build-$sanitizer/$(rustc -vV | sed -n 's/^host: //p')/release

one() {
  local t=$1 crate corpus log
  crate=$(crate_of "$t")
  corpus=$work/corpus/$t
  log=$work/$t.log
  mkdir -p "$corpus" "$work/artifacts/$t"
  # The committed seeds (`fuzz/seeds`), and the HEF fixtures for the HEF reader.
  cp -n "$root/$crate/seeds/$t/"* "$corpus/" 2>/dev/null || true
  [ "$t" = from_bytes ] && cp -n "$root"/fixtures/*.hef "$corpus/"
  nice -n 19 "$bin_dir/$t" "$corpus" -runs="$runs" -rss_limit_mb=4096 -timeout=30 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$t/" >"$log" 2>&1 || true
  if [ "${CORPUS:-0}" = 1 ]; then
    mkdir -p "$root/$crate/seeds/$t"
    "$bin_dir/$t" -merge=1 -use_counters=0 -rss_limit_mb=4096 "$root/$crate/seeds/$t" \
      "$corpus" >"$work/$t.merge.log" 2>&1 || echo "merging $t's corpus failed: $work/$t.merge.log" >&2
  fi
}
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n; done
  one "$t" &
done
wait

echo "| target | runs | time | runs/s | peak RSS | crashes, leaks, timeouts, out-of-memory |"
echo "|---|---|---|---|---|---|"
status=0
for t in "${targets[@]}"; do
  log=$work/$t.log
  units=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  found=$(find "$work/artifacts/$t" -type f | wc -l)
  if [ -z "$secs" ] || [ "$found" -gt 0 ]; then
    status=1
    what="$found found: $work/artifacts/$t ($log)"
  else
    what=none
  fi
  rate=$(( ${units:-0} / (${secs:-1} > 0 ? ${secs:-1} : 1) ))
  echo "| \`$(crate_of "$t")\` \`$t\` | ${units:-?} | ${secs:-?} s | $rate | ${rss:-?} MB | $what |"
done
exit $status
