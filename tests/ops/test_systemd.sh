#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The systemd files: systemd-analyze verify on the configured unit, the unit's
# and the default config's options against the daemon's flags, the contract
# keys of the unit (sandbox, restart policy against daemon/ops/exit_codes.hpp),
# the sandbox's systemd-analyze security exposure (at most 2.0), and the
# sysusers/tmpfiles snippets applied to a scratch root.
# usage: test_systemd.sh BUILD_DIR SOURCE_DIR SIGVERIFYD_BIN
set -euo pipefail
BUILD=$1 SRC=$2 BIN=$3
UNIT=$BUILD/systemd/sigverifyd.service
T=$(mktemp -d /tmp/sigverify-systemd-XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -f "$UNIT" ] || fail "configured unit $UNIT missing"
command -v systemd-analyze >/dev/null || { echo "systemd-analyze not installed: skipped"; exit 77; }

# 1. The configured unit names the installed binary and config.
grep -q '^ExecStart=/[^ ]*/sbin/sigverifyd --foreground --config /[^ ]*/sigverifyd/sigverifyd.conf' "$UNIT" ||
  fail "ExecStart does not run the installed sbin/sigverifyd with the installed config: $(grep ^ExecStart "$UNIT")"
! grep -q '@[A-Z_]*@' "$UNIT" || fail "unsubstituted @VARIABLES@ in $UNIT"

# 2. systemd-analyze verify. The binary is not installed in the test
#    environment, so a copy runs the built one (and the source tree's config);
#    everything else is the configured unit as shipped.
sed -e "s#^ExecStart=[^ ]*/sigverifyd #ExecStart=$BIN #" \
    -e "s#--config [^ ]*sigverifyd.conf#--config $SRC/systemd/sigverifyd.conf#" "$UNIT" > "$T/sigverifyd.service"
if ! out=$(systemd-analyze verify "$T/sigverifyd.service" 2>&1); then
  echo "$out" >&2
  fail "systemd-analyze verify failed"
fi
# Warnings about this unit are failures too (unknown keys, bad values).
if echo "$out" | grep -i 'sigverifyd.service' ; then fail "systemd-analyze verify warned about the unit"; fi
echo "systemd-analyze verify: ok"

# 3. Contract keys.
for key in 'Type=notify' 'NotifyAccess=main' 'WatchdogSec=' 'Restart=on-failure' 'User=sigverify' 'Group=sigverify' \
           'RemoveIPC=no' 'RuntimeDirectory=sigverifyd' 'RuntimeDirectoryMode=0750' 'ProtectSystem=strict' \
           'ProtectHome=yes' 'PrivateTmp=yes' 'NoNewPrivileges=yes' 'RestrictAddressFamilies=AF_UNIX' \
           'DevicePolicy=closed' 'DeviceAllow=char-nvidiactl' 'DeviceAllow=char-nvidia-uvm' 'EnvironmentFile=' \
           'ExecReload=/bin/kill -HUP $MAINPID' 'SystemCallFilter=@system-service' 'SystemCallErrorNumber=EPERM' \
           'SystemCallArchitectures=native' 'PrivateNetwork=yes' 'IPAddressDeny=any' 'ProtectProc=invisible' \
           'PrivateMounts=yes' 'UMask=0007' 'RestrictNamespaces=yes' 'LockPersonality=yes' 'CPUWeight=100'; do
  grep -q "^$key" "$UNIT" || fail "unit lacks $key"
done
grep -qx 'CapabilityBoundingSet=' "$UNIT" || fail "unit lacks an empty CapabilityBoundingSet="
# DynamicUser/RemoveIPC: shared memory; PrivateDevices: the GPUs; PrivateUsers:
# SO_PEERCRED and the group; MemoryDenyWriteExecute: CUDA's PTX JIT;
# ProcSubset=pid: the CUDA driver reads /proc/driver/nvidia (the unit says why).
for key in 'DynamicUser=yes' 'PrivateDevices=yes' 'PrivateUsers=yes' 'MemoryDenyWriteExecute=yes' 'ProcSubset=pid'; do
  ! grep -q "^$key" "$UNIT" || fail "unit must not set $key"
done

# 3b. The statuses a restart cannot fix are daemon/ops/exit_codes.hpp's usage and configuration errors.
code() { sed -n "s/.*inline constexpr int $1 = \([0-9]*\);.*/\1/p" "$SRC/daemon/ops/exit_codes.hpp"; }
want="$(code usage_error) $(code config_error)"
[ "$want" != " " ] || fail "cannot read the statuses from daemon/ops/exit_codes.hpp"
got=$(sed -n 's/^RestartPreventExitStatus=//p' "$UNIT")
[ "$got" = "$want" ] || fail "RestartPreventExitStatus=$got, but daemon/ops/exit_codes.hpp says '$want'"
echo "RestartPreventExitStatus: $got (matches daemon/ops/exit_codes.hpp)"

# 3c. The sandbox's exposure as systemd rates it (0 = fully sandboxed, 10 = none).
out=$(systemd-analyze security --offline=true --no-pager "$T/sigverifyd.service" 2>&1) || true
score=$(sed -n 's/.*Overall exposure level for sigverifyd.service: \([0-9.]*\).*/\1/p' <<<"$out")
[ -n "$score" ] || { echo "$out" >&2; fail "systemd-analyze security printed no exposure level"; }
echo "systemd-analyze security: exposure $score"
awk -v s="$score" 'BEGIN { exit !(s + 0 <= 2.0) }' || { echo "$out" >&2; fail "exposure $score is above 2.0"; }

# 4. Every option the unit passes and every key of the default config is a daemon flag.
help=$("$BIN" --help)
for opt in $(grep '^ExecStart=' "$UNIT" | grep -o -- '--[a-z-]*'); do
  grep -q -- "$opt" <<<"$help" || fail "ExecStart passes $opt, which sigverifyd does not accept"
done
keys=$(sed -n 's/^#\{0,1\} *\([a-z][a-z0-9-]*\) *=.*/\1/p' "$SRC/systemd/sigverifyd.conf")
[ "$(wc -w <<<"$keys")" -ge 10 ] || fail "too few keys found in sigverifyd.conf"
for k in $keys; do
  grep -q -- "--$k\b" <<<"$help" || fail "sigverifyd.conf key '$k' is not a sigverifyd flag"
done
# (test_notify parses the shipped config with every key uncommented and checks each value landed.)

# 5. sysusers and tmpfiles applied to a scratch root.
if command -v systemd-sysusers >/dev/null; then
  mkdir -p "$T/root/etc"
  systemd-sysusers --root="$T/root" "$SRC/systemd/sigverifyd.sysusers"
  grep -q '^sigverify:' "$T/root/etc/passwd" || fail "sysusers did not create user sigverify"
  grep -q '^sigverify:' "$T/root/etc/group" || fail "sysusers did not create group sigverify"
  if command -v systemd-tmpfiles >/dev/null; then
    systemd-tmpfiles --root="$T/root" --create "$SRC/systemd/sigverifyd.tmpfiles"
    [ "$(stat -c %a "$T/root/run/sigverifyd")" = 750 ] || fail "tmpfiles: /run/sigverifyd is not mode 0750"
    uid=$(awk -F: '$1=="sigverify"{print $3}' "$T/root/etc/passwd")
    [ "$(stat -c %u "$T/root/run/sigverifyd")" = "$uid" ] || fail "tmpfiles: /run/sigverifyd not owned by sigverify"
  fi
  echo "sysusers/tmpfiles: ok"
fi
echo "PASS"
