#!/usr/bin/env bash
# One command: build the release binary, run the end-to-end benchmark (benches/e2e/: main.rs + one file per scenario) against the adb CLI,
# write bench/results.json and print the markdown table. Needs `adb` (apt-get install -y adb).
# Knobs: BENCH_SCALE_PHONES (64), BENCH_SCALE_SECS (60), BENCH_QUICK=1 (smoke run); extra arguments select
# scenarios by name: tap states screenshot screenshot-usb agent-step ui footprint footprint-writes breakdown observe settle hang
# live scale.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v adb >/dev/null || { echo "bench/run.sh: the adb binary is required (apt-get install -y adb)" >&2; exit 2; }
# Raise the open-file limit a little: 64 phones × (adb transports + per-call connections) on one box.
ulimit -n 8192 2>/dev/null || true
cargo build --release --locked
exec cargo bench --locked --bench e2e -- "$@"
