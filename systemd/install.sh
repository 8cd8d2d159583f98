#!/usr/bin/env bash
# Installs xagent-adb-connector as a systemd service (Debian / Raspberry Pi OS / Ubuntu). Run as root.
#
#   sudo ./systemd/install.sh [BINARY]     BINARY defaults to ../xagent-adb-connector beside this folder (the
#                                          release tarball's layout)
#   sudo ./systemd/install.sh --uninstall  removes binary, units and udev rule; keeps /etc/xagent-adb-connector,
#                                          /var/lib/xagent-adb-connector and the user (prints how to purge them)
#
# Idempotent: re-running upgrades the binary and units; an existing API key and env file are never overwritten.
# It does not enable or start anything; it prints the commands for that.
set -euo pipefail

NAME=xagent-adb-connector
SVC_USER=xagent-adb
STATE_DIR=/var/lib/$NAME
CONF_DIR=/etc/$NAME
BIN_DST=/usr/local/bin/$NAME
UNIT_DIR=/etc/systemd/system
UDEV_RULE=/etc/udev/rules.d/52-xagent-adb-android.rules
DOC_DIR=/usr/local/share/doc/$NAME
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() { printf 'install.sh: error: %s\n' "$*" >&2; exit 1; }
step() { printf '  - %s\n' "$*"; }
systemd_running() { [ -d /run/systemd/system ]; }

# --help first: reading the usage needs no root.
# The usage is the comment block at the top (line 2 up to the first line that is not a comment), without "# ".
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
[ "$(id -u)" -eq 0 ] || die "run as root (sudo $0 $*)"

if [ "${1:-}" = "--uninstall" ]; then
  if systemd_running; then
    systemctl disable --now "$NAME.service" adb-server.service 2>/dev/null || true
  fi
  rm -f "$BIN_DST" "$UNIT_DIR/$NAME.service" "$UNIT_DIR/adb-server.service" "$UDEV_RULE"
  rm -rf "$DOC_DIR"
  if systemd_running; then systemctl daemon-reload; fi
  echo "Uninstalled $NAME. Kept: $CONF_DIR (API key), $STATE_DIR (state, adb key), user $SVC_USER. To purge:"
  echo "  rm -rf $CONF_DIR $STATE_DIR && userdel $SVC_USER"
  exit 0
fi

SRC=${1:-$HERE/../$NAME}
[ -f "$SRC" ] || die "binary not found at $SRC (pass its path: $0 /path/to/$NAME)"
[ "$#" -le 1 ] || die "too many arguments"

echo "Installing $NAME"

# 1. binary: check that it runs on this machine before replacing anything.
if ! version=$("$SRC" --version 2>&1); then
  die "$SRC does not run here ($(uname -m)): wrong architecture tarball? ($version)"
fi
install -d -m 0755 "$(dirname "$BIN_DST")"
tmp=$(mktemp "$BIN_DST.XXXXXX")
install -m 0755 "$SRC" "$tmp"
mv -f "$tmp" "$BIN_DST"
step "binary: $BIN_DST ($version)"

# 2. adb (Debian package; also brings the big udev rule list /lib/udev/rules.d/51-android.rules)
if [ ! -x /usr/bin/adb ]; then
  if command -v apt-get >/dev/null; then
    step "installing Debian package adb"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq adb >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq adb >/dev/null; } ||
      die "apt-get install adb failed"
  else
    echo "  ! /usr/bin/adb is missing: install adb, or point adb-server.service's ExecStart at your adb" >&2
  fi
fi

# 3. group plugdev and the system user
if ! getent group plugdev >/dev/null; then
  groupadd --system plugdev
  step "created group plugdev"
fi
if getent passwd "$SVC_USER" >/dev/null; then
  usermod -a -G plugdev "$SVC_USER"
  step "user $SVC_USER exists (ensured it is in plugdev)"
else
  useradd --system --user-group --home-dir "$STATE_DIR" --no-create-home --shell /usr/sbin/nologin \
    --groups plugdev --comment "xAgent ADB connector" "$SVC_USER"
  step "created system user $SVC_USER (home $STATE_DIR, groups plugdev)"
fi
install -d -o "$SVC_USER" -g "$SVC_USER" -m 0750 "$STATE_DIR"

# 4. configuration: API key (only if absent) and env file (only if absent)
install -d -o root -g root -m 0755 "$CONF_DIR"
if [ -s "$CONF_DIR/api-key" ]; then
  step "API key: kept existing $CONF_DIR/api-key"
else
  (
    umask 077
    key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    [ "${#key}" -eq 64 ] || die "could not generate a key"
    printf '%s\n' "$key" >"$CONF_DIR/api-key.tmp"
    mv -f "$CONF_DIR/api-key.tmp" "$CONF_DIR/api-key"
  )
  step "API key: generated $CONF_DIR/api-key (0600 root; systemd hands it to the service as a credential)"
fi
chown root:root "$CONF_DIR/api-key"
chmod 0600 "$CONF_DIR/api-key"
if [ -f "$CONF_DIR/env" ]; then
  step "env file: kept existing $CONF_DIR/env"
else
  cat >"$CONF_DIR/env" <<'EOF'
# Environment of xagent-adb-connector.service (read at every start: `systemctl restart xagent-adb-connector`).
# Every `serve` flag has a variable here; see docs/configuration.md (installed in /usr/local/share/doc/xagent-adb-connector).

# Address for HTTP + WebSocket. 0.0.0.0 lets the xAgent platform reach this box over the network; /health and
# /ws require the API key (the card and skill.md are public). Plain HTTP: use a VPN or a TLS proxy across untrusted
# networks. Use 127.0.0.1:8790 to keep it local.
XAGENT_ADB_LISTEN=0.0.0.0:8790

# adb server(s), comma-separated. adb-server.service runs one on 127.0.0.1:5037.
XAGENT_ADB_SERVER=127.0.0.1:5037

# Only these device serials may be bound (comma-separated; `adb devices` shows serials). Empty: any device.
#XAGENT_ADB_ALLOW_SERIALS=

# Logs go to the journal. text or json; filter with RUST_LOG (e.g. info, xagent_adb_connector=debug).
XAGENT_ADB_LOG_FORMAT=text
RUST_LOG=info

#XAGENT_ADB_LEASE_GRACE=1h
#XAGENT_ADB_MAX_MESSAGE_BYTES=1048576
#XAGENT_ADB_DRAIN_TIMEOUT=30s

# A small request body (the wall login, any JSON; not uploads) must arrive whole this long after its head (408).
#XAGENT_ADB_BODY_TIMEOUT=5s

# The wall is reached through a TLS proxy: mark its session cookie Secure.
#XAGENT_ADB_WALL_SECURE_COOKIE=true

# Only without an API key (this service always has one): host names browsers may use for the wall (comma-
# separated; IP addresses and localhost always work), and the explicit consent to serve keyless on the network.
#XAGENT_ADB_ALLOWED_HOSTS=pi-lab-3.local
#XAGENT_ADB_ALLOW_NO_API_KEY_ON_NETWORK=true
EOF
  chmod 0644 "$CONF_DIR/env"
  step "env file: wrote defaults to $CONF_DIR/env (listens on 0.0.0.0:8790)"
fi

# 5. units, udev rule, docs
install -m 0644 "$HERE/$NAME.service" "$UNIT_DIR/$NAME.service"
install -m 0644 "$HERE/adb-server.service" "$UNIT_DIR/adb-server.service"
step "units: $UNIT_DIR/$NAME.service, $UNIT_DIR/adb-server.service"
install -d -m 0755 "$(dirname "$UDEV_RULE")"
install -m 0644 "$HERE/51-android.rules" "$UDEV_RULE"
step "udev rule: $UDEV_RULE (adds to Debian's /lib/udev/rules.d/51-android.rules)"
if command -v udevadm >/dev/null && [ -S /run/udev/control ]; then
  udevadm control --reload-rules && udevadm trigger --subsystem-match=usb --action=change || true
fi
install -d -m 0755 "$DOC_DIR"
[ -f "$HERE/../README.md" ] && install -m 0644 "$HERE/../README.md" "$DOC_DIR/README.md"
# The reference the README links (docs/configuration.md, …), beside it so its relative links work.
if [ -d "$HERE/../docs" ]; then
  install -d -m 0755 "$DOC_DIR/docs"
  for f in "$HERE"/../docs/*.md; do [ -f "$f" ] && install -m 0644 "$f" "$DOC_DIR/docs/"; done
fi
install -m 0644 "$HERE/README.md" "$DOC_DIR/INSTALL.md"

if systemd_running; then
  systemctl daemon-reload
  step "systemctl daemon-reload done"
else
  step "systemd is not running here (container?): skipped systemctl daemon-reload"
fi

cat <<EOF

Done. Next steps:
  1. Start the adb server and the connector (and at every boot):
       systemctl enable --now adb-server.service $NAME.service
  2. Check everything:       sudo $NAME doctor           (reads $CONF_DIR/env and the key; says what to fix)
  3. Plug in a phone with USB debugging on, accept the "Allow USB debugging?" prompt (tick "Always allow"), then:
       sudo $NAME devices    (should list the phone as "device", not "unauthorized")
  4. Watch the log:          journalctl -u $NAME -f      (Ctrl-C to stop; adb: journalctl -u adb-server)
  5. Give the xAgent platform this box's address (port 8790) and the API key in $CONF_DIR/api-key.
  Settings: $CONF_DIR/env, then systemctl restart $NAME. Rotating the key: see $DOC_DIR/INSTALL.md.

Your own adb commands: run them only while adb-server.service is active (systemctl is-active adb-server). An
\`adb devices\` before it starts spawns a private adb server as *you* on 127.0.0.1:5037, with your own key, so the
service's server cannot start and phones show "unauthorized". If that happened:
  adb kill-server && sudo systemctl restart adb-server
(\`sudo $NAME doctor\` warns when the adb server on 5037 does not run as $SVC_USER.)
EOF
