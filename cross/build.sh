#!/usr/bin/env bash
# Builds static (musl) release binaries of xagent-adb-connector and packs them as release tarballs.
#
#   cross/build.sh [TARGET...]      default: aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf
#                                            x86_64-unknown-linux-musl
#
# Idempotent, runs from any directory, installs what it needs when missing:
#   - rustup std for each target (`rustup target add`); when rustup cannot download a target's std (seen for
#     armv7-unknown-linux-musleabihf on this workplace's mirror), it falls back to building std from rustup's
#     `rust-src` component (`-Zbuild-std`, RUSTC_BOOTSTRAP=1, same compiler);
#   - zig + cargo-zigbuild, pinned, from PyPI into a venv ($ZIGVENV, default /opt/zigvenv);
#   - Debian packages qemu-user-static (ARM smoke tests), file, curl.
# Per target: `cargo zigbuild --locked --release --target T --target-dir target/cross` (build-std targets:
# target/cross/build-std), check that the binary is
# statically linked, strip it if it is not, pack dist/xagent-adb-connector-<version>-<T>.tar.gz (binary, systemd/,
# README.md, LICENSE if present), rewrite dist/SHA256SUMS, smoke-test it (cross/smoke.sh: under qemu-user for ARM,
# natively for x86_64) and print a size table.
#
# Environment knobs: ZIGVENV, SKIP_SMOKE=1 (build and pack only), SOURCE_DATE_EPOCH (defaults to the last commit's
# time so tarballs are reproducible), SMOKE_TIMEOUT (seconds, see cross/smoke.sh).
set -euo pipefail

ZIG_VERSION=0.17.1
ZIGBUILD_VERSION=0.24.1
ZIGVENV=${ZIGVENV:-/opt/zigvenv}
BIN=xagent-adb-connector
DEFAULT_TARGETS=(aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf x86_64-unknown-linux-musl)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR="$ROOT/target/cross"
DIST="$ROOT/dist"

log() { printf '\n==> %s\n' "$*" >&2; }
die() { printf '\nerror: %s\n' "$*" >&2; exit 1; }

if [ "$#" -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${DEFAULT_TARGETS[@]}"); fi
for t in "${TARGETS[@]}"; do
  case "$t" in
    aarch64-unknown-linux-musl | armv7-unknown-linux-musleabihf | x86_64-unknown-linux-musl | \
      arm-unknown-linux-musleabihf) ;;
    *) die "unsupported target '$t' (supported: ${DEFAULT_TARGETS[*]} arm-unknown-linux-musleabihf)" ;;
  esac
done

command -v cargo >/dev/null || die "cargo not found: install Rust with rustup first"
command -v rustup >/dev/null || die "rustup not found: this script adds targets with rustup"
command -v python3 >/dev/null || die "python3 not found (needed for the zig venv and the smoke test)"

# ---------------------------------------------------------------------------------------------------- host tools
APT_UPDATED=0
apt_install() { # apt_install PKG... (only called for missing tools)
  command -v apt-get >/dev/null || die "missing tools and no apt-get: install $* by hand"
  if [ "$APT_UPDATED" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq || die "apt-get update failed"
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null || die "apt-get install $* failed"
}

need_pkgs=()
command -v file >/dev/null || need_pkgs+=(file)
command -v curl >/dev/null || need_pkgs+=(curl)
if [ -z "${SKIP_SMOKE:-}" ]; then
  for t in "${TARGETS[@]}"; do
    case "$t" in
      aarch64-*) command -v qemu-aarch64-static >/dev/null || need_pkgs+=(qemu-user-static) ;;
      arm*) command -v qemu-arm-static >/dev/null || need_pkgs+=(qemu-user-static) ;;
    esac
  done
fi
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  # shellcheck disable=SC2207
  need_pkgs=($(printf '%s\n' "${need_pkgs[@]}" | sort -u))
  apt_install "${need_pkgs[@]}"
fi

zig_ok() {
  [ -x "$ZIGVENV/bin/cargo-zigbuild" ] && [ -x "$ZIGVENV/bin/python-zig" ] || return 1
  local have
  have=$("$ZIGVENV/bin/pip" freeze 2>/dev/null) || return 1
  grep -qx "ziglang==$ZIG_VERSION" <<<"$have" && grep -qx "cargo-zigbuild==$ZIGBUILD_VERSION" <<<"$have"
}
if ! zig_ok; then
  log "installing ziglang==$ZIG_VERSION cargo-zigbuild==$ZIGBUILD_VERSION into $ZIGVENV"
  if [ ! -x "$ZIGVENV/bin/pip" ]; then
    python3 -m venv "$ZIGVENV" || {
      apt_install python3-venv
      python3 -m venv "$ZIGVENV"
    } || die "cannot create the venv $ZIGVENV"
  fi
  "$ZIGVENV/bin/pip" install -q --disable-pip-version-check "ziglang==$ZIG_VERSION" \
    "cargo-zigbuild==$ZIGBUILD_VERSION" || die "pip install of zig / cargo-zigbuild failed"
  zig_ok || die "zig venv at $ZIGVENV is not usable after install"
fi
export PATH="$ZIGVENV/bin:$PATH"

# ------------------------------------------------------------------------------------------------- rust targets
declare -A BUILD_STD=()
SYSROOT=$(rustc --print sysroot)
ensure_target() { # sets BUILD_STD[$1]=1 when std must be built from source
  local t=$1
  if rustup target list --installed | grep -qx "$t"; then return 0; fi
  log "rust std for $t"
  if rustup target add "$t" >/dev/null 2>&1 && rustup target list --installed | grep -qx "$t"; then
    echo "    installed with rustup target add $t" >&2
    return 0
  fi
  # Expected offline or on mirrors without this target's std: not an error, the fallback builds the same std.
  echo "    no prebuilt std for $t from rustup (offline, or not on the mirror): building std from rust-src" \
    "with -Zbuild-std instead (same compiler; slower first build)" >&2
  if [ ! -d "$SYSROOT/lib/rustlib/src/rust/library/std" ]; then
    rustup component add rust-src >/dev/null 2>&1 ||
      die "neither rust-std for $t nor the rust-src component could be installed with rustup"
  fi
  BUILD_STD[$t]=1
}
for t in "${TARGETS[@]}"; do ensure_target "$t"; done

# ------------------------------------------------------------------------------------------------------ version
VERSION=$(cargo metadata --no-deps --format-version 1 |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "'"$BIN"'"))') ||
  VERSION=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n1)
[ -n "$VERSION" ] || die "cannot read the package version from Cargo.toml"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)
  export SOURCE_DATE_EPOCH
fi
log "$BIN $VERSION for: ${TARGETS[*]}"

# -------------------------------------------------------------------------------------------------------- build
strip_binary() { # strip_binary FILE: the first tool that manages (llvm-strip, GNU strip, zig objcopy) wins
  local f=$1 tmp tool
  tmp="$f.strip.tmp"
  for tool in "llvm-strip -s -o $tmp $f" "strip -s -o $tmp $f" "python-zig objcopy --strip-all $f $tmp"; do
    command -v "${tool%% *}" >/dev/null || continue
    rm -f "$tmp"
    # shellcheck disable=SC2086
    if $tool 2>/dev/null && [ -s "$tmp" ] && [[ "$(file -b "$tmp")" != *"not stripped"* ]]; then
      chmod 0755 "$tmp" && mv -f "$tmp" "$f"
      return 0
    fi
  done
  rm -f "$tmp"
  die "$f is not stripped and no strip tool could strip it (apt-get install binutils-multiarch, or llvm)"
}

declare -A BIN_SIZE=() TAR_SIZE=() FILE_OUT=() BUILD_SECS=() OUT=()
mkdir -p "$DIST"
for t in "${TARGETS[@]}"; do
  tdir=$TARGET_DIR
  envs=()
  if [ -n "${BUILD_STD[$t]:-}" ]; then
    # Own target dir: RUSTC_BOOTSTRAP=1 changes host build scripts' view (proc-macro2 & co. probe for nightly), so
    # sharing target/cross with the other targets would rebuild all proc-macros on every switch.
    tdir=$TARGET_DIR/build-std
  fi
  args=(zigbuild --locked --release --target "$t" --target-dir "$tdir")
  if [ -n "${BUILD_STD[$t]:-}" ]; then
    args+=(-Zbuild-std=std,panic_abort)
    # rustup's rust-src sysroot has no self-contained crt objects for $t; zig supplies musl's start files.
    var="CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$t")_RUSTFLAGS"
    envs=(RUSTC_BOOTSTRAP=1 "$var=-C link-self-contained=no")
  fi
  log "cargo ${args[*]}${envs:+ (with ${envs[*]})}"
  start=$SECONDS
  env "${envs[@]}" cargo "${args[@]}" || die "build for $t failed"
  BUILD_SECS[$t]=$((SECONDS - start))

  out="$tdir/$t/release/$BIN"
  OUT[$t]=$out
  [ -f "$out" ] || die "build for $t produced no binary at $out"
  desc=$(file -b "$out")
  case "$desc" in
    *"dynamically linked"* | *interpreter*) die "$t: binary is not static: $desc" ;;
    *"statically linked"* | *"static-pie linked"*) ;;
    *) die "$t: 'file' does not say statically linked: $desc" ;;
  esac
  if [[ "$desc" == *"not stripped"* ]]; then
    log "stripping $t binary"
    strip_binary "$out"
    desc=$(file -b "$out")
  fi
  FILE_OUT[$t]=$desc
  echo "    $desc" >&2

  # ---- pack
  name="$BIN-$VERSION-$t"
  stage=$(mktemp -d)
  mkdir -p "$stage/$name/systemd"
  install -m 0755 "$out" "$stage/$name/$BIN"
  for f in "$ROOT"/systemd/*; do
    [ -f "$f" ] || continue
    if [ -x "$f" ]; then install -m 0755 "$f" "$stage/$name/systemd/"; else install -m 0644 "$f" "$stage/$name/systemd/"; fi
  done
  # What an operator reads beside the binary: the alert rules and dashboard, the device profile (protocol, tool
  # schemas, the phone helper's wire protocol), the agent's skill and the wall's picture. The README is the
  # repository's; a note on top says where what it names but the tarball lacks (sources, tests, benchmarks) is.
  for d in monitoring device-profile skills docs; do
    [ -d "$ROOT/$d" ] || continue
    cp -R "$ROOT/$d" "$stage/$name/$d"
    find "$stage/$name/$d" -type d -exec chmod 0755 {} + -o -type f -exec chmod 0644 {} +
  done
  {
    printf '> This README is the source repository'"'"'s. This tarball holds the binary, `systemd/`, `monitoring/`,\n'
    printf '> `device-profile/`, `skills/` and `docs/`; the sources, tests, benchmarks and build scripts it also names\n'
    printf '> (`src/`, `tests/`, `bench/`, `cross/`, `phone-helper/`, `BENCHMARKS.md`, `ARCHITECTURE.md`) are in the\n'
    printf '> repository the tarball was built from (%s). Here the binary is `./xagent-adb-connector`: the commands\n' "$VERSION"
    printf '> below are written as you run them in this folder.\n\n'
    # What the repository runs through cargo or from target/release is the binary beside this README here.
    sed -e 's#cargo run --release -- #./xagent-adb-connector #g' \
        -e 's#target/release/xagent-adb-connector#./xagent-adb-connector#g' "$ROOT/README.md"
  } >"$stage/$name/README.md"
  chmod 0644 "$stage/$name/README.md"
  # Every file or folder the README names under a packed folder (a repository path, not `/etc/systemd/…`) must
  # be in the tarball.
  missing=$(grep -oP '(?<![/\w.-])(systemd|monitoring|device-profile|skills|docs)/[\w./-]*[\w/]' "$ROOT/README.md" \
    | sort -u | while read -r p; do [ -e "$stage/$name/$p" ] || echo "$p"; done)
  [ -z "$missing" ] || die "the README names files the tarball does not hold: $(echo $missing)"
  for lic in LICENSE LICENSE.md LICENSE.txt LICENSE-APACHE LICENSE-MIT; do
    if [ -f "$ROOT/$lic" ]; then install -m 0644 "$ROOT/$lic" "$stage/$name/$lic"; fi
  done
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    -C "$stage" -cf - "$name" | gzip -9n >"$DIST/$name.tar.gz.tmp"
  mv -f "$DIST/$name.tar.gz.tmp" "$DIST/$name.tar.gz"
  rm -rf "$stage"
  log "$name.tar.gz holds $(tar -tzf "$DIST/$name.tar.gz" | grep -vc '/$') files:"
  tar -tzvf "$DIST/$name.tar.gz" | awk '$1 !~ /^d/ { printf "    %10s  %s\n", $3, $6 }' >&2
  BIN_SIZE[$t]=$(stat -c %s "$out")
  TAR_SIZE[$t]=$(stat -c %s "$DIST/$name.tar.gz")
done

(cd "$DIST" && sha256sum "$BIN"-"$VERSION"-*.tar.gz >SHA256SUMS.tmp && mv -f SHA256SUMS.tmp SHA256SUMS)
log "dist/SHA256SUMS"
cat "$DIST/SHA256SUMS"

# -------------------------------------------------------------------------------------------------------- smoke
if [ -z "${SKIP_SMOKE:-}" ]; then
  for t in "${TARGETS[@]}"; do
    log "smoke test $t"
    "$ROOT/cross/smoke.sh" "$t" "${OUT[$t]}" || die "smoke test for $t failed"
  done
fi

# -------------------------------------------------------------------------------------------------------- table
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
log "release artifacts ($BIN $VERSION)"
printf '%-32s %12s %10s %12s %10s %7s\n' target binary_bytes binary tar.gz_bytes tar.gz build_s
for t in "${TARGETS[@]}"; do
  printf '%-32s %12s %10s %12s %10s %7s\n' "$t" "${BIN_SIZE[$t]}" "$(mib "${BIN_SIZE[$t]}")" \
    "${TAR_SIZE[$t]}" "$(mib "${TAR_SIZE[$t]}")" "${BUILD_SECS[$t]}"
done
for t in "${TARGETS[@]}"; do printf '%s: %s\n' "$t" "${FILE_OUT[$t]}"; done
if [ -n "${SKIP_SMOKE:-}" ]; then smoked=" (smoke tests skipped)"; else smoked=" and smoke-tested"; fi
echo "ok: ${#TARGETS[@]} target(s) built, packed$smoked into $DIST"
