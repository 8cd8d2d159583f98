#!/usr/bin/env bash
# CI entry for the cross build: builds only aarch64-unknown-linux-musl (static, with zig) and smoke-tests it under
# qemu-aarch64-static. Installs everything it needs on a fresh machine (rustup target, /opt/zigvenv with pinned
# ziglang + cargo-zigbuild from PyPI, Debian qemu-user-static, file, curl); see cross/build.sh.
set -euo pipefail
exec "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/build.sh" aarch64-unknown-linux-musl
