#!/usr/bin/env bash
# Builds the Kubernetes test binaries the Kubernetes suites run against, when they are missing:
#   kube-apiserver  from the Go module k8s.io/kubernetes (a throwaway wrapper module that pins every
#                   k8s.io staging module to the matching v0.X.Y, as k8s.io/kubernetes's own go.mod
#                   points them at ./staging)
#   etcd            go.etcd.io/etcd/server/v3 at the version k8s.io/kubernetes itself requires, built in
#                   the same wrapper module (Debian's etcd-server is 3.4, older than the 3.5 line this
#                   kube-apiserver is released and tested with)
#   helm            helm.sh/helm/v3/cmd/helm
#   kubectl         k8s.io/kubernetes/cmd/kubectl, only when no kubectl within one minor version of the
#                   API server is on PATH (Debian's kubernetes-client is 1.20) or ZONEKEEPER_BUILD_KUBECTL=1
# into ${ZONEKEEPER_CACHE:-$HOME/.cache/zonekeeper}/k8s/v<kubernetes version>/, with the machine's Go
# toolchain and the Go module proxy. Skips whatever is already cached; idempotent and safe to rerun.
# Prints the directory on stdout (everything else goes to stderr).
#
# Tests find the binaries through ZONEKEEPER_K8S_BIN (set by test/support/kube.ts from the same
# defaults) and skip with a reason when they are absent and this script was not run.
set -euo pipefail

K8S_VERSION="${ZONEKEEPER_K8S_VERSION:-1.33.13}"
HELM_VERSION="${ZONEKEEPER_HELM_VERSION:-3.19.5}"
CACHE="${ZONEKEEPER_CACHE:-$HOME/.cache/zonekeeper}"
DEST="$CACHE/k8s/v$K8S_VERSION"
STAGING_VERSION="v0.${K8S_VERSION#1.}"

log() { echo "ensure-k8s-binaries: $*" >&2; }

# kubectl: the machine's when it is close enough to the API server's version, else built here.
want_kubectl=0
if [ "${ZONEKEEPER_BUILD_KUBECTL:-0}" = 1 ]; then
  want_kubectl=1
elif [ ! -x "$DEST/kubectl" ]; then
  minor="$(kubectl version --client -o json 2>/dev/null | sed -n 's/.*"minor": *"\([0-9]*\).*/\1/p' | head -1)"
  want="$(echo "$K8S_VERSION" | cut -d. -f2)"
  if [ -z "$minor" ] || [ $((minor - want)) -gt 1 ] || [ $((want - minor)) -gt 1 ]; then want_kubectl=1; fi
fi

missing() {
  need=()
  [ -x "$DEST/kube-apiserver" ] || need+=(kube-apiserver)
  [ -x "$DEST/etcd" ] || need+=(etcd)
  [ -x "$DEST/helm" ] || need+=(helm)
  if [ "$want_kubectl" = 1 ] && [ ! -x "$DEST/kubectl" ]; then need+=(kubectl); fi
}
missing
if [ ${#need[@]} -eq 0 ]; then
  echo "$DEST"
  exit 0
fi

command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] || {
  log "no Go toolchain (go) on PATH; cannot build ${need[*]}"
  exit 1
}
command -v go >/dev/null 2>&1 || export PATH="/usr/local/go/bin:$PATH"

mkdir -p "$DEST"
# One build at a time per cache directory (parallel test files, CI and a developer).
exec 9>"$DEST/.lock"
flock 9
missing
if [ ${#need[@]} -eq 0 ]; then
  echo "$DEST"
  exit 0
fi

export GOFLAGS=-mod=mod
export GOMAXPROCS="${GOMAXPROCS:-2}"
export CGO_ENABLED=0
export GOTOOLCHAIN=local
BUILD=(go build -p "$GOMAXPROCS" -trimpath)
# Version stamps (what `go build` of a module cannot know; the Kubernetes and Helm builds set the same).
KUBE_LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  KUBE_LDFLAGS+=" -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=${K8S_VERSION%%.*}"
  KUBE_LDFLAGS+=" -X $pkg.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X $pkg.gitTreeState=clean"
  KUBE_LDFLAGS+=" -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
HELM_LDFLAGS="-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
log "go: $(go version); building ${need[*]} into $DEST"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

build_kube() {
  local mod="$work/kube"
  mkdir -p "$mod"
  local gomod
  gomod="$(cd "$mod" && go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [ -f "$gomod" ] || { log "could not download k8s.io/kubernetes@v$K8S_VERSION"; exit 1; }
  local etcd_version
  etcd_version="$(sed -n 's/^[[:space:]]*go.etcd.io\/etcd\/server\/v3 \(v[0-9.]*\).*/\1/p' "$gomod" | head -1)"
  [ -n "$etcd_version" ] || { log "k8s.io/kubernetes@v$K8S_VERSION does not name an etcd server version"; exit 1; }
  {
    echo "module zonekeeper.invalid/k8s-test-binaries"
    echo
    echo "go 1.24.0"
    echo
    echo "require ("
    echo "	k8s.io/kubernetes v$K8S_VERSION"
    echo "	go.etcd.io/etcd/server/v3 $etcd_version"
    echo ")"
    echo
    echo "replace ("
    # every `k8s.io/X => ./staging/src/k8s.io/X` of k8s.io/kubernetes becomes `k8s.io/X => k8s.io/X v0.Y.Z`
    sed -n 's/^[[:space:]]*\(k8s\.io\/[a-z0-9-]*\) => \.\/staging\/src\/k8s\.io\/[a-z0-9-]*$/\1/p' "$gomod" |
      while read -r m; do echo "	$m => $m $STAGING_VERSION"; done
    echo ")"
  } >"$mod/go.mod"
  cat >"$mod/tools.go" <<'EOF'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
EOF
  (cd "$mod" && go mod tidy >&2)
  if [ ! -x "$DEST/kube-apiserver" ]; then
    local t0=$SECONDS
    (cd "$mod" && "${BUILD[@]}" -ldflags="$KUBE_LDFLAGS" -o "$DEST/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
    mv "$DEST/kube-apiserver.tmp" "$DEST/kube-apiserver"
    log "kube-apiserver v$K8S_VERSION built in $((SECONDS - t0)) s"
  fi
  if [ ! -x "$DEST/etcd" ]; then
    local t0=$SECONDS
    (cd "$mod" && "${BUILD[@]}" -ldflags="-s -w" -o "$DEST/etcd.tmp" go.etcd.io/etcd/server/v3)
    mv "$DEST/etcd.tmp" "$DEST/etcd"
    log "etcd $etcd_version built in $((SECONDS - t0)) s"
  fi
  if [ "$want_kubectl" = 1 ] && [ ! -x "$DEST/kubectl" ]; then
    local t0=$SECONDS
    (cd "$mod" && "${BUILD[@]}" -ldflags="$KUBE_LDFLAGS" -o "$DEST/kubectl.tmp" k8s.io/kubernetes/cmd/kubectl)
    mv "$DEST/kubectl.tmp" "$DEST/kubectl"
    log "kubectl v$K8S_VERSION built in $((SECONDS - t0)) s"
  fi
}

build_helm() {
  local mod="$work/helm"
  mkdir -p "$mod"
  cat >"$mod/go.mod" <<EOF
module zonekeeper.invalid/helm

go 1.24.0

require helm.sh/helm/v3 v$HELM_VERSION
EOF
  cat >"$mod/tools.go" <<'EOF'
//go:build tools

package tools

import _ "helm.sh/helm/v3/cmd/helm"
EOF
  local t0=$SECONDS
  (
    cd "$mod"
    go mod tidy >&2
    # The Kubernetes version helm assumes without a cluster (`helm template`, `helm lint`): the one of
    # its client-go, as helm's own Makefile stamps it.
    local kv major minor
    kv="$(go list -m -f '{{.Version}}' k8s.io/client-go)"
    major=$(($(echo "$kv" | sed 's/^v\([0-9]*\)\..*/\1/') + 1))
    minor="$(echo "$kv" | cut -d. -f2)"
    local flags="$HELM_LDFLAGS"
    for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
      flags+=" -X $pkg.k8sVersionMajor=$major -X $pkg.k8sVersionMinor=$minor"
    done
    "${BUILD[@]}" -ldflags="$flags" -o "$DEST/helm.tmp" helm.sh/helm/v3/cmd/helm
  )
  mv "$DEST/helm.tmp" "$DEST/helm"
  log "helm v$HELM_VERSION built in $((SECONDS - t0)) s"
}

if [ ! -x "$DEST/kube-apiserver" ] || [ ! -x "$DEST/etcd" ] || { [ "$want_kubectl" = 1 ] && [ ! -x "$DEST/kubectl" ]; }; then
  build_kube
fi
if [ ! -x "$DEST/helm" ]; then build_helm; fi
"$DEST/kube-apiserver" --version >&2
"$DEST/etcd" --version >&2 | head -1
"$DEST/helm" version --short >&2
[ ! -x "$DEST/kubectl" ] || "$DEST/kubectl" version --client >&2
echo "$DEST"
