#!/usr/bin/env bash
# One command: build the release binary, run the end-to-end benchmark (benches/e2e/: main.rs + one file per scenario) against the adb CLI,
# write bench/results.json and print the markdown table. Needs `adb` (apt-get install -y adb).
# Knobs: BENCH_SCALE_PHONES (64), BENCH_SCALE_SECS (60), BENCH_QUICK=1 (smoke run); extra arguments select
# scenarios by name: tap states screenshot screenshot-usb agent-step agent-cost ui footprint footprint-writes breakdown observe
# settle hang live scale.
# agent-cost (issue 49 item 9) also needs, and prepares once under target/ (reused by later runs): the release binary
# of the commit before issue 49's work (`BENCH_BEFORE_BIN`, built from `git archive`, no worktree), and mobile-mcp
# 1.0.4 from the npm registry (`BENCH_PEER_MCP`; needs node and npm). Either may be given instead; without node the
# peer is left out and the report says why.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v adb >/dev/null || { echo "bench/run.sh: the adb binary is required (apt-get install -y adb)" >&2; exit 2; }
# Raise the open-file limit a little: 64 phones × (adb transports + per-call connections) on one box.
ulimit -n 8192 2>/dev/null || true
cargo build --release --locked
if [ $# -eq 0 ] || printf '%s\n' "$@" | grep -q '^agent-cost$'; then
  # The commit before issue 49's work: the parent of its first commit (8625853, "the manual over MCP, …").
  before=$(git rev-parse --short 8625853^)
  dir=target/agent-cost-before/$before
  if [ -z "${BENCH_BEFORE_BIN:-}" ]; then
    if [ ! -x "$dir/target/release/xagent-adb-connector" ]; then
      mkdir -p "$dir"
      git archive "$before" | tar -C "$dir" -m -x  # -m: mtimes now, so cargo rebuilds the crate
      # Dependencies are the same crates: start from this tree's release build so only the crate itself compiles.
      [ -d "$dir/target/release" ] || { mkdir -p "$dir/target" && cp -a target/release "$dir/target/"; }
      (cd "$dir" && cargo build --release --locked --bin xagent-adb-connector)
    fi
    export BENCH_BEFORE_BIN="$PWD/$dir/target/release/xagent-adb-connector"
  fi
  if [ -z "${BENCH_PEER_MCP:-}" ] && command -v npm >/dev/null && command -v node >/dev/null; then
    peer=target/mobile-mcp
    js=$peer/node_modules/@mobilenext/mobile-mcp/lib/index.js
    if [ ! -f "$js" ]; then
      mkdir -p "$peer" && echo '{"private": true}' > "$peer/package.json"
      (cd "$peer" && npm install --no-audit --no-fund @mobilenext/mobile-mcp@1.0.4) || true
    fi
    [ -f "$js" ] && export BENCH_PEER_MCP="$PWD/$js"
  fi
fi
exec cargo bench --locked --bench e2e -- "$@"
