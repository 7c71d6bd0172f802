#!/usr/bin/env bash
# Installs the Debian packages the test suites run against, when they are missing: the DNS peers
# (Knot, PowerDNS, BIND, NSD), Unbound (the validating resolver of the DNSSEC suites), the query tools (dig, kdig, dnsperf) and python3 (the independent
# homelab-protocol provider in test/support, standard library only). Idempotent; needs root
# (or sudo) only when something is missing.
set -euo pipefail

# command -> Debian package
declare -A needed=(
  [dig]=dnsutils
  [nsupdate]=dnsutils
  [kdig]=knot-dnsutils
  [knsupdate]=knot-dnsutils
  [nsupdate]=dnsutils
  [knotd]=knot
  [kzonecheck]=knot-dnssecutils
  [dnsperf]=dnsperf
  [nsd]=nsd
  [named]=bind9
  [named-checkzone]=bind9-utils
  [pdns_server]=pdns-server
  [pdnsutil]=pdns-server
  [sqlite3]=sqlite3
  [python3]=python3-minimal
  [unbound]=unbound
)

missing=()
for cmd in "${!needed[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || missing+=("${needed[$cmd]}")
done
# PowerDNS backends are modules, not commands (test/powerdns.test.ts runs LMDB and SQLite).
for module in lmdb:pdns-backend-lmdb gsqlite3:pdns-backend-sqlite3; do
  compgen -G "/usr/lib/*/pdns/lib${module%%:*}backend.so" >/dev/null || missing+=("${module#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

mapfile -t packages < <(printf '%s\n' "${missing[@]}" | sort -u)
echo "ensure-system-packages: installing ${packages[*]}" >&2
run=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "ensure-system-packages: need root to install ${packages[*]}" >&2; exit 1; }
  run=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${run[@]}" apt-get update -qq
# Installing daemons must not start them: the tests run their own instances on loopback.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | "${run[@]}" tee "$policy" >/dev/null
  "${run[@]}" chmod +x "$policy"
  created_policy=1
fi
"${run[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
[ "$created_policy" -eq 1 ] && "${run[@]}" rm -f "$policy"
exit 0
