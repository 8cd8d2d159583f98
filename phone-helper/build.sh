#!/usr/bin/env bash
# Reassembles the phone helper's dex from its smali source: phone-helper/xagent-helper.dex, committed beside the
# source; tests/phone_helper.rs checks that this reproduces it byte for byte, then runs it on a host JVM.
# Needs Debian's smali (apt-get install libsmali-java; 2.5.2 was used) and a JRE.
#   phone-helper/build.sh            rewrite xagent-helper.dex
#   phone-helper/build.sh OUT.dex    write elsewhere (the test does this)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/xagent-helper.dex}
# --api 26: dex version 038, Android 8.0 and newer (the helper's floor). -j 1: one thread, so nothing about the
# output can depend on scheduling (smali sorts classes and pools itself; the output is deterministic either way).
smali assemble --api 26 -j 1 -o "$out" "$here/smali"
# smali does not type-check; dexdump at least parses every method back (the JVM tests run them).
if command -v dexdump >/dev/null 2>&1; then
  dexdump -d "$out" >/dev/null
fi
echo "$out: $(wc -c <"$out") bytes, sha256 $(sha256sum "$out" | cut -c1-16)"
