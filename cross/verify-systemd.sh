#!/usr/bin/env bash
# Validates the systemd units in systemd/ with `systemd-analyze`; works where systemd is not PID 1 (containers, CI).
#
#   cross/verify-systemd.sh
#
# How: `systemd-analyze verify` insists that every ExecStart= executable exists and is executable, but
# /usr/local/bin/xagent-adb-connector is only there after install.sh, and /usr/bin/adb only with Debian's adb
# package. So the units are copied to a temporary directory and, in the copies only, those two paths are replaced:
#   /usr/local/bin/xagent-adb-connector -> target/cross/x86_64-unknown-linux-musl/release/xagent-adb-connector if
#                                          built (else /bin/true)
#   /usr/bin/adb                         -> itself if it exists (else /bin/true)
# Nothing else changes (the script prints the diff). `--root=` was tried: systemd 252 then wants a whole unit tree
# (sysinit.target ...) inside the root, so it is not used. verify must print nothing at all (warnings about unknown
# keys, bad values or missing executables fail this script), and must exit 0.
# Then `systemd-analyze security --offline=yes` prints each unit's exposure score (informational, never fails).
# Installs Debian's `systemd` package if systemd-analyze is missing (it does not start systemd).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
UNITS=(xagent-adb-connector.service adb-server.service)
die() { printf 'verify-systemd: FAIL: %s\n' "$*" >&2; exit 1; }

if ! command -v systemd-analyze >/dev/null; then
  command -v apt-get >/dev/null || die "systemd-analyze is missing and there is no apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null
fi
echo "systemd-analyze: $(systemd-analyze --version | head -n1)"

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

connector=$ROOT/target/cross/x86_64-unknown-linux-musl/release/xagent-adb-connector
[ -x "$connector" ] || connector=/bin/true
adb=/usr/bin/adb
[ -x "$adb" ] || adb=/bin/true

for u in "${UNITS[@]}"; do
  [ -f "$ROOT/systemd/$u" ] || die "systemd/$u is missing"
  sed -e "s|/usr/local/bin/xagent-adb-connector|$connector|g" -e "s|/usr/bin/adb|$adb|g" "$ROOT/systemd/$u" >"$T/$u"
  echo "--- $u: lines changed for verification"
  changed=$(diff "$ROOT/systemd/$u" "$T/$u" | grep '^[<>]' || true)
  printf '%s\n' "${changed:-(none)}"
done

echo "--- systemd-analyze verify ${UNITS[*]}"
rc=0
out=$(cd "$T" && systemd-analyze verify "${UNITS[@]/#/$T/}" 2>&1) || rc=$?
if [ -n "$out" ]; then printf '%s\n' "$out"; fi
[ "$rc" -eq 0 ] || die "systemd-analyze verify exited $rc"
[ -z "$out" ] || die "systemd-analyze verify printed warnings (above)"
echo "verify: ok (no warnings)"

if systemd-analyze security --help 2>&1 | grep -q -- '--offline'; then
  for u in "${UNITS[@]}"; do
    echo "--- systemd-analyze security --offline=yes $u"
    if sec=$(systemd-analyze security --offline=yes "$T/$u" 2>&1); then
      if [ "$u" = xagent-adb-connector.service ]; then
        printf '%s\n' "$sec" | grep -E '^✗' || true
      fi
      printf '%s\n' "$sec" | grep -E 'Overall exposure level' || printf '%s\n' "$sec" | tail -n 1
    else
      printf '%s\n' "$sec" | tail -n 5
      echo "(security analysis failed; not fatal)"
    fi
  done
else
  echo "systemd-analyze has no --offline security mode here; skipped the exposure score"
fi
echo "verify-systemd: PASS"
