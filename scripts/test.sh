#!/usr/bin/env bash
# `npm test`: every test. Installs missing system packages first, then type-checks, lints, and runs
# the unit tests (src/**/*.test.ts) and the integration and end-to-end suites (test/**/*.test.ts)
# with Node's test runner.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-system-packages.sh
# kube-apiserver, etcd, helm (and kubectl when needed), built from Go modules into a cache outside
# the clone on first use (~18 minutes cold, seconds afterwards).
bash scripts/ensure-k8s-binaries.sh >/dev/null
# The Go programs of test/gotools (ExternalDNS, Pebble) and certbot, also cached outside the clone.
node test/support/prepare-tools.ts
echo "== typecheck" && tsc -p tsconfig.json
echo "== lint" && npm run lint
echo "== tests"
exec node --test --test-concurrency=2 --test-timeout=300000 'src/**/*.test.ts' 'test/**/*.test.ts'
