#!/usr/bin/env bash
# `npm test`: every test. Installs missing system packages first, then type-checks, lints, and runs
# the unit tests (src/**/*.test.ts) and the integration and end-to-end suites (test/**/*.test.ts)
# with Node's test runner.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-system-packages.sh
echo "== typecheck" && tsc -p tsconfig.json
echo "== lint" && biome ci --reporter=summary .
echo "== tests"
exec node --test --test-concurrency=2 --test-timeout=300000 'src/**/*.test.ts' 'test/**/*.test.ts'
