#!/usr/bin/env bash
# Runs every test: the native suite, the same suite under ASan + UBSan, the same suite as
# wasm (SIMD128) under node, the command line, short fuzz runs, the browser end-to-end
# test in headless Chromium and the desktop window under Xvfb.
# Screenshots and logs go to artifacts/. Set FUZZ_SECONDS to fuzz longer (default 30 each).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "test: setup failed"; exit 1; }
export NODE_PATH=/usr/share/nodejs
jobs=${JOBS:-2}
fuzz_seconds=${FUZZ_SECONDS:-30}
artifacts=$PWD/artifacts
mkdir -p "$artifacts"
passed=0 failed=0 failures=()

step() {  # step NAME COMMAND...: runs a command, logs it, counts it
    local name=$1; shift
    echo "== $name"
    local start=$SECONDS
    if "$@" > >(tee "$artifacts/$name.log") 2>&1; then
        passed=$((passed + 1)); echo "-- $name: ok ($((SECONDS - start)) s)"
    else
        failed=$((failed + 1)); failures+=("$name"); echo "-- $name: FAILED ($((SECONDS - start)) s)"
    fi
}

build() {  # build DIR CONFIGURE-ARGS... [--target TARGETS...]
    local dir=$1; shift
    local configure=() targets=()
    while [ $# -gt 0 ]; do
        if [ "$1" = --target ]; then shift; targets=(--target "$@"); break; fi
        configure+=("$1"); shift
    done
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "${configure[@]}" >/dev/null &&
        cmake --build "$dir" -j "$jobs" "${targets[@]}"
}

fuzz() {  # fuzz TARGET CORPUS: new inputs go to a scratch folder, the committed corpus stays as is
    local scratch dict=(); scratch=$(mktemp -d)
    [ -f "tests/fuzz/$2.dict" ] && dict=(-dict="tests/fuzz/$2.dict")
    build-fuzz/"$1" "${dict[@]}" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=4096 \
        -artifact_prefix="$artifacts/$1-" "$scratch" "tests/fuzz/corpus/$2" 2>&1 | tail -n 3
    local code=${PIPESTATUS[0]}
    rm -rf "$scratch"
    return "$code"
}

step native-build build build
step native-suite build/attn_tests
step cli-native bash tests/cli_test.sh build/attnviz tests/data
step exporter /usr/bin/python3 tests/test_exporter.py build/attnviz

step sanitize-build build build-asan -DATTN_APP=OFF -DATTN_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
step sanitize-suite env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build-asan/attn_tests
step sanitize-cli bash tests/cli_test.sh build-asan/attnviz tests/data

step wasm-build bash -c "emcmake cmake -S . -B build-web -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-web -j $jobs"
step wasm-suite node --no-experimental-fetch build-web/attn_tests.js

step fuzz-build build build-fuzz -DATTN_APP=OFF -DATTN_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-14 --target fuzz_scene fuzz_tokenizer fuzz_import
step fuzz-scene fuzz fuzz_scene scene
step fuzz-tokenizer fuzz fuzz_tokenizer tokenizer
step fuzz-import fuzz fuzz_import import

step browser node tests/browser/e2e.mjs build-web/site "$artifacts/browser"
step embed node tests/browser/embed.mjs build-web/site "$artifacts/embed"
step browser-export node tests/browser/export.mjs build-web/site "$artifacts/browser-export"
step browser-import node tests/browser/import.mjs build-web/site "$artifacts/browser-import"
step heatmap-zoom node tests/browser/heatmap_zoom.mjs build-web/site "$artifacts/heatmap-zoom"
step lines-scale node tests/browser/lines_scale.mjs build-web/site "$artifacts/lines-scale"
step desktop bash tests/desktop/desktop_test.sh build "$artifacts/desktop"

[ ${#failures[@]} -eq 0 ] || echo "failed steps: ${failures[*]} (logs in artifacts/)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
