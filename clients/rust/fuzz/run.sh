#!/usr/bin/env bash
# Runs every fuzz target for a bounded time: bash fuzz/run.sh [SECONDS_PER_TARGET] (from clients/rust).
# cargo-fuzz is built into target/tools (no global install); nightly is used if rustup has it, else the stable
# toolchain with RUSTC_BOOTSTRAP=1 (cargo fuzz needs -Z flags for its sanitizer and coverage instrumentation).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
tools="$PWD/target/tools"
if [ ! -x "$tools/bin/cargo-fuzz" ]; then
    cargo install --quiet --locked --root "$tools" cargo-fuzz@0.13.1
fi
export PATH="$tools/bin:$PATH"
toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
else
    export RUSTC_BOOTSTRAP=1
fi
for target in $(cargo "${toolchain[@]}" fuzz list); do
    echo "-- fuzz $target for ${seconds}s"
    cargo "${toolchain[@]}" fuzz run --release "$target" -- -max_total_time="$seconds" -rss_limit_mb=2048 \
        -print_final_stats=0 2>&1 | tail -3
done
