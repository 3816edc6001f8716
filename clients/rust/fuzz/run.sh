#!/usr/bin/env bash
# Runs every fuzz target for a bounded time: bash fuzz/run.sh [SECONDS_PER_TARGET] (from clients/rust).
# cargo-fuzz is installed once, into cargo's bin (~/.cargo/bin), when absent (the version pinned here); nightly is
# used if rustup has it, else the stable toolchain with RUSTC_BOOTSTRAP=1 (cargo fuzz needs -Z flags for its
# sanitizer and coverage instrumentation). The targets are built together first, then each runs for its time (side
# by side: below); the
# builds go to fuzz/target, or to CARGO_TARGET_DIR when set (.ci/run keeps one outside the clone, reused across runs).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
cargo_fuzz_version=0.13.1
if ! command -v cargo-fuzz >/dev/null; then
    echo "-- installing cargo-fuzz $cargo_fuzz_version into cargo's bin"
    cargo install --quiet --locked "cargo-fuzz@$cargo_fuzz_version"
    command -v cargo-fuzz >/dev/null || export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
else
    export RUSTC_BOOTSTRAP=1
fi
echo "-- $(cargo fuzz --version), rustc $(rustc "${toolchain[@]}" --version | cut -d' ' -f2-)"
build_start=$SECONDS
cargo "${toolchain[@]}" fuzz build --release
echo "-- fuzz targets built in $((SECONDS - build_start)) s"
# The targets run side by side, as many at once as the machine has cores (FUZZ_JOBS to choose): each is
# single-threaded, and each still gets its whole time. Each one's last lines are printed once all are done; a target
# that finds a crash fails the run.
jobs="${FUZZ_JOBS:-$(nproc)}"
logs=$(mktemp -d)
declare -A running=()  # pid -> target
failed=()
reap() {  # wait for one running target; a failure is remembered by name
    local pid=""
    wait -n -p pid "${!running[@]}" || failed+=("${running[$pid]}")
    unset "running[$pid]"
}
for target in $(cargo "${toolchain[@]}" fuzz list); do
    while [ "${#running[@]}" -ge "$jobs" ]; do reap; done
    echo "-- fuzz $target for ${seconds}s"
    cargo "${toolchain[@]}" fuzz run --release "$target" -- -max_total_time="$seconds" -rss_limit_mb=2048 \
        -print_final_stats=0 >"$logs/$target.log" 2>&1 &
    running[$!]=$target
done
while [ "${#running[@]}" -gt 0 ]; do reap; done
for log in "$logs"/*.log; do
    echo "-- $(basename "$log" .log):"
    tail -3 "$log"
done
rm -rf "$logs"
status=0
for target in "${failed[@]}"; do echo "-- fuzz $target FAILED (its output above)" >&2; status=1; done
exit "$status"
