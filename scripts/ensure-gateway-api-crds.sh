#!/usr/bin/env bash
# Fetches the Gateway API CRDs (config/crd/standard of the Go module sigs.k8s.io/gateway-api) through
# the Go module proxy into ${ZONEKEEPER_CACHE:-$HOME/.cache/zonekeeper}/gateway-api/v<version>/, when
# missing. Prints that directory on stdout (everything else goes to stderr). Idempotent.
# test/gateway-dns-kubernetes.test.ts installs these CRDs into its API server.
set -euo pipefail

VERSION="${ZONEKEEPER_GATEWAY_API_VERSION:-1.6.3}"
CACHE="${ZONEKEEPER_CACHE:-$HOME/.cache/zonekeeper}"
DEST="$CACHE/gateway-api/v$VERSION"

if ls "$DEST"/*.yaml >/dev/null 2>&1; then
  echo "$DEST"
  exit 0
fi
export GOMODCACHE="$CACHE/gomod"
export GOFLAGS=-mod=mod
echo "ensure-gateway-api-crds: go mod download sigs.k8s.io/gateway-api@v$VERSION" >&2
dir="$(cd /tmp && go mod download -json "sigs.k8s.io/gateway-api@v$VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
[ -d "$dir/config/crd/standard" ] || { echo "ensure-gateway-api-crds: no config/crd/standard in $dir" >&2; exit 1; }
mkdir -p "$DEST"
cp "$dir"/config/crd/standard/*.yaml "$DEST"/
echo "$DEST"
