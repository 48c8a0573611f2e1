#!/usr/bin/env bash
# Builds the web app (WebAssembly + WebGL2) and serves it at http://127.0.0.1:8080/.
# PORT=9000 scripts/run.sh serves elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export NODE_PATH=/usr/share/nodejs
emcmake cmake -S . -B build-web -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-web -j "${JOBS:-2}" --target attnviz_page
# Cross-origin isolated (COOP + COEP), so the page may share memory with its threads: it then
# loads the threaded module (docs/WEB.md). A host without these headers gets the one-thread one.
exec python3 scripts/serve.py build-web/site --port "${PORT:-8080}" \
    --header 'Cross-Origin-Opener-Policy: same-origin' --header 'Cross-Origin-Embedder-Policy: require-corp'
