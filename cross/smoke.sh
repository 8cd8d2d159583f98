#!/usr/bin/env bash
# Smoke-tests one built binary: under qemu-user for ARM targets, natively for x86_64.
#
#   cross/smoke.sh TARGET BINARY
#
# 1. `BINARY --version` must succeed and print something.
# 2. `BINARY serve --listen 127.0.0.1:<free port> --data-dir <tmp> --adb-server 127.0.0.1:1` runs in the background
#    (nothing listens on port 1: the connector must tolerate an absent adb server and just retry).
# 3. GET /health must answer 2xx within $SMOKE_TIMEOUT seconds (default 30; qemu is slow).
# 4. GET /connector-card.json must be JSON with "connector_card_id": "device.adb".
# 5. SIGTERM; the process should exit (0) within 35 s (the binary drains in-flight work for up to 30 s).
# Needs curl and python3; qemu-aarch64-static / qemu-arm-static (Debian qemu-user-static) for ARM.
set -euo pipefail

[ "$#" -eq 2 ] || { echo "usage: $0 TARGET BINARY" >&2; exit 2; }
TARGET=$1
BINARY=$2
TIMEOUT=${SMOKE_TIMEOUT:-30}

fail() { printf 'smoke[%s]: FAIL: %s\n' "$TARGET" "$*" >&2; exit 1; }
say() { printf 'smoke[%s]: %s\n' "$TARGET" "$*" >&2; }

[ -x "$BINARY" ] || fail "binary $BINARY missing or not executable"
case "$TARGET" in
  aarch64-*) RUNNER=(qemu-aarch64-static) ;;
  arm*) RUNNER=(qemu-arm-static) ;;
  x86_64-*) RUNNER=() ;;
  *) fail "unknown target $TARGET" ;;
esac
if [ "${#RUNNER[@]}" -gt 0 ]; then
  command -v "${RUNNER[0]}" >/dev/null || fail "${RUNNER[0]} not found (apt-get install qemu-user-static)"
fi
command -v curl >/dev/null || fail "curl not found"

# A clean environment: no operator key or listen address may leak in from the caller's shell.
CLEAN_ENV=(env -u XAGENT_CONNECTOR_API_KEY -u XAGENT_ADB_API_KEY_FILE -u XAGENT_ADB_LISTEN -u XAGENT_ADB_DATA_DIR
  -u XAGENT_ADB_SERVER -u XAGENT_ADB_ALLOW_SERIALS -u XAGENT_ADB_LOG_FORMAT RUST_LOG=info)

# 1. --version
start=$SECONDS
version=$("${CLEAN_ENV[@]}" "${RUNNER[@]}" "$BINARY" --version 2>&1) || fail "--version failed: $version"
[ -n "$version" ] || fail "--version printed nothing"
say "--version: $version ($((SECONDS - start)) s)"

# 2. serve
TMP=$(mktemp -d)
PID=
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"
"${CLEAN_ENV[@]}" "${RUNNER[@]}" "$BINARY" serve --listen "127.0.0.1:$PORT" --data-dir "$TMP/data" \
  --adb-server 127.0.0.1:1 >"$TMP/serve.log" 2>&1 &
PID=$!
say "serve started (pid $PID) on $BASE"

show_log() { echo "---- serve log (last 40 lines) ----" >&2; tail -n 40 "$TMP/serve.log" >&2 || true; echo "----" >&2; }

# 3. /health
start=$SECONDS
health=
while :; do
  if health=$(curl -sf --max-time 5 "$BASE/health" 2>/dev/null); then break; fi
  if ! kill -0 "$PID" 2>/dev/null; then
    rc=0
    wait "$PID" || rc=$?
    PID=
    show_log
    fail "serve exited with status $rc before /health answered"
  fi
  if [ $((SECONDS - start)) -ge "$TIMEOUT" ]; then
    show_log
    fail "/health did not answer within $TIMEOUT s"
  fi
  sleep 0.5
done
say "/health after $((SECONDS - start)) s: $(tr -d '\n' <<<"$health" | tr -s ' ' | cut -c1-300)"

# 4. /connector-card.json
curl -sf --max-time 10 "$BASE/connector-card.json" -o "$TMP/card.json" || { show_log; fail "GET /connector-card.json failed"; }
summary=$(python3 - "$TMP/card.json" <<'EOF'
import json, sys
card = json.load(open(sys.argv[1]))
if card.get("connector_card_id") != "device.adb":
    sys.exit("connector_card_id is %r, expected 'device.adb'" % card.get("connector_card_id"))
build = card.get("build") if isinstance(card.get("build"), dict) else {}
facts = [("connector_card_id", card["connector_card_id"]), ("protocol_version", card.get("protocol_version"))]
facts += [(k, build[k]) for k in ("version", "git_rev", "build_time") if k in build]
facts.append(("tools", len(card.get("tools") or [])))
print(", ".join("%s=%s" % kv for kv in facts))
EOF
) || { show_log; fail "connector card check failed: $summary"; }
say "/connector-card.json ok: $summary"

# 5. graceful stop
kill -TERM "$PID"
start=$SECONDS
while kill -0 "$PID" 2>/dev/null && [ $((SECONDS - start)) -lt 35 ]; do sleep 0.2; done
if kill -0 "$PID" 2>/dev/null; then
  show_log
  fail "serve did not exit within 35 s of SIGTERM"
fi
rc=0
wait "$PID" || rc=$?
PID=
if [ "$rc" -ne 0 ]; then
  show_log
  say "WARNING: serve exited with status $rc after SIGTERM (expected 0)"
else
  say "stopped cleanly on SIGTERM after $((SECONDS - start)) s"
fi
say "PASS"
