#!/usr/bin/env bash
# The VS Code extension's tests, from a fresh machine (as root) or a prepared one:
# installs chromium and code-server (scripts/setup-e2e.sh), the npm packages from the
# lockfile, then type-checks, builds the .vsix, and runs the unit tests (against the real
# agent in ../../.venv) and the end-to-end tests in code-server. Each install step is skipped
# when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

repo="$(cd ../.. && pwd)"
if [ ! -x "$repo/.venv/bin/hermes-acp" ]; then
  echo "ci.sh: $repo/.venv/bin/hermes-acp is missing; install the agent first (see the README)" >&2
  exit 1
fi

CODE_SERVER="$(bash scripts/setup-e2e.sh | tail -n 1)"
export CODE_SERVER

lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat node_modules/.installed-from 2>/dev/null)" != "$lock_hash" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > node_modules/.installed-from
fi

npm run --silent typecheck
npm run --silent package >/dev/null
npm run --silent test:unit
npm run --silent test:e2e
