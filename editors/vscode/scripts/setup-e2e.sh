#!/usr/bin/env bash
# Installs what the extension's end-to-end tests need: Debian's chromium (and ripgrep, whose
# binary code-server's own ripgrep package would otherwise download), and code-server 4.100.3
# (VS Code 1.100.3, the newest that runs on Node 20) into a cache folder outside the repo.
# Idempotent: each step is skipped when its result is already there. Prints the
# code-server binary's path on its last line.
set -euo pipefail

CODE_SERVER_VERSION=4.100.3
RG_PACKAGE_VERSION=1.15.11   # @vscode/ripgrep pinned by code-server 4.100.3
RG_ASSET=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
CACHE="${HERMES_VSCODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-acp-vscode}"
PREFIX="$CACHE/code-server-$CODE_SERVER_VERSION"
BIN="$PREFIX/node_modules/.bin/code-server"

log() { echo "setup-e2e: $*" >&2; }

need_apt=()
command -v chromium >/dev/null || need_apt+=(chromium)
command -v rg >/dev/null || need_apt+=(ripgrep)
if [ ! -x "$BIN" ]; then
  # Native modules of code-server (kerberos, node-pty, argon2) build from source.
  [ -e /usr/include/gssapi/gssapi.h ] || need_apt+=(libkrb5-dev)
  command -v pkg-config >/dev/null || need_apt+=(pkg-config)
  command -v g++ >/dev/null || need_apt+=(build-essential)
  command -v python3 >/dev/null || need_apt+=(python3)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  log "apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  apt-get install -y -q --no-install-recommends "${need_apt[@]}" >&2
fi

if [ ! -x "$BIN" ]; then
  log "installing code-server@$CODE_SERVER_VERSION into $PREFIX"
  mkdir -p "$PREFIX"
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  # @vscode/ripgrep's postinstall downloads rg from GitHub unless its cache holds the asset:
  # give it Debian's rg (the same upstream 13.0.0).
  mkdir -p "$scratch/vscode-ripgrep-cache-$RG_PACKAGE_VERSION"
  cp "$(command -v rg)" "$scratch/rg"
  tar -C "$scratch" -czf "$scratch/vscode-ripgrep-cache-$RG_PACKAGE_VERSION/$RG_ASSET" rg
  [ -f "$PREFIX/package.json" ] || echo '{"private": true}' > "$PREFIX/package.json"
  # nodedir: node-gyp builds against the local headers instead of downloading them;
  # yes: node-pty's postinstall runs `npx node-gyp`, which yes=false would cancel.
  TMPDIR="$scratch" npm_config_nodedir=/usr npm_config_yes=true \
    npm install --prefix "$PREFIX" --unsafe-perm --no-audit --no-fund --loglevel=error \
    "code-server@$CODE_SERVER_VERSION" >&2
fi
[ -x "$BIN" ] || { log "code-server did not install"; exit 1; }
echo "$BIN"
