#!/usr/bin/env bash
# Runs every test: the native suite, the same suite under ASan + UBSan (clang, in the fuzz build),
# the same suite as wasm under node (SIMD128, and relaxed SIMD), the command line, short fuzz runs, the browser
# end-to-end test in headless Chromium, the notebook package (pytest, nbclient, Jupyter Notebook)
# and the desktop window under Xvfb.
# Screenshots and logs go to artifacts/ (one NAME.log per step). Set FUZZ_SECONDS to fuzz longer
# (default 10 each: every committed seed is replayed, then a little exploring; fuzzing is not a
# test, a long run is FUZZ_SECONDS=600 by hand).
#
# Four chains of steps run side by side, each step in its chain's order: the wasm build and the
# browser (it runs first: the others yield the CPU to it, under nice), the native build and what
# uses it, the sanitized build and its suite (these two under nice 5: the browser's last step needs
# the native build, and the sanitized chain is the longest: at nice 10 its build got the CPU last
# and finished alone, 1523 s into a 1681 s run), and the fuzzers (once the sanitized build is
# there; under nice 10). A line is printed as each step ends; the summary at the end lists every
# step in one order, and shows the failure lines and the end of the log of each that failed.
# Each step's wall time and CPU time (user + system of the processes it ran and waited for;
# Chromium's renderer and GPU processes are not among them, so the browser steps' CPU is low by
# about 2.5x) are in its line: with the chains side by side, the CPU time is the steadier number.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "test: setup failed"; exit 1; }
export NODE_PATH=/usr/share/nodejs
jobs=${JOBS:-2}
fuzz_seconds=${FUZZ_SECONDS:-10}
artifacts=$PWD/artifacts
mkdir -p "$artifacts"

timed() {  # timed NAME COMMAND... (in a subshell of its own): runs it, writes NAME.status: exit code, wall s, CPU s
    local name=$1; shift
    local start=$SECONDS code
    "$@"; code=$?
    times > "$artifacts/$name.times"  # line 2: this subshell's children, i.e. the command, user and system
    echo "$code $((SECONDS - start)) $(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; ++i) { split($i, p, "m"); t += p[1] * 60 + p[2] } printf "%.0f", t }' \
        "$artifacts/$name.times")" > "$artifacts/$name.status"
    rm -f "$artifacts/$name.times"
}
result() {  # result NAME: "ok (W s, cpu C s)" or "FAILED (…)" from NAME.status
    local code='' secs='?' cpu='?'
    [ -f "$artifacts/$1.status" ] && read -r code secs cpu < "$artifacts/$1.status"
    if [ "${code:-1}" -eq 0 ]; then echo "ok ($secs s, cpu $cpu s)"; else echo "FAILED ($secs s, cpu $cpu s)"; fi
}
step() {  # step NAME COMMAND...: runs a step of a chain (its name listed in the chain's order),
    local name=$1; shift  # its output to artifacts/NAME.log
    echo "$name" >> "$artifacts/chain-$chain.steps"
    ( timed "$name" "$@" > "$artifacts/$name.log" 2>&1 )
    echo "-- $name: $(result "$name")"
}
after() {  # after NAME: waits until step NAME has ended (in another chain)
    while [ ! -f "$artifacts/$1.status" ]; do sleep 2; done
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

# [chain 1] The wasm build, its suites, the browser.
chain_wasm() {
    step wasm-build bash -c "emcmake cmake -S . -B build-web -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-web -j $jobs --target all attn_tests attn_tests_relaxed"
    step wasm-suite node --no-experimental-fetch build-web/attn_tests.js
    # The second module (relaxed SIMD, renumbered by scripts/wasm_relaxed.py): node 20 runs it behind a flag.
    step wasm-suite-relaxed node --no-experimental-fetch --experimental-wasm-relaxed-simd build-web/attn_tests_relaxed.js
    step browser node tests/browser/e2e.mjs build-web/site "$artifacts/browser"
    step embed node tests/browser/embed.mjs build-web/site "$artifacts/embed"
    step browser-export node tests/browser/export.mjs build-web/site "$artifacts/browser-export"
    step browser-import node tests/browser/import.mjs build-web/site "$artifacts/browser-import"
    step heatmap-zoom node tests/browser/heatmap_zoom.mjs build-web/site "$artifacts/heatmap-zoom"
    step lines-scale node tests/browser/lines_scale.mjs build-web/site "$artifacts/lines-scale"
    step browser-model node tests/browser/model.mjs build-web/site "$artifacts/browser-model" build-web/model-refs
    step browser-builtin node tests/browser/builtin.mjs build-web/site "$artifacts/browser-builtin"
    # The threaded module where the page is cross-origin isolated, the same numbers as one thread.
    step browser-threads node tests/browser/threads.mjs build-web/site "$artifacts/browser-threads"
    # Models by name in the page (SPEC.md §6), from a stand-in of the Hub (tests/hub/hub_server.py).
    step browser-hub node tests/browser/hub.mjs build-web/site "$artifacts/browser-hub" build-web/model-refs
    # attnviz in a notebook (SPEC.md §7): pip install ./python in a venv, pytest, the example
    # executed by nbclient offline, nbconvert's export; then those outputs in Chromium, offline.
    step notebook /usr/bin/python3 tests/notebook/test_notebook.py "$artifacts/notebook"
    step browser-notebook node tests/browser/notebook.mjs "$artifacts/notebook" "$artifacts/browser-notebook" build-web/model-refs
    step browser-phone node tests/browser/phone.mjs build-web/site "$artifacts/browser-phone"
    step browser-a11y node tests/browser/a11y.mjs build-web/site "$artifacts/browser-a11y"
    # A newcomer's path: every built-in scene by link, every view, desktop, phone and 中文; the docs' links.
    step browser-newcomer node tests/browser/newcomer.mjs build-web/site "$artifacts/browser-newcomer"
    after native-build  # the experiments compare the page with the native command line
    step browser-experiments node tests/browser/experiments.mjs build-web/site "$artifacts/browser-experiments" build/attnviz
    # The page as a served model's front end (issue 51): attnviz.serve() on a torch model, against attnviz run.
    step browser-served node tests/browser/served.mjs build-web/site "$artifacts/browser-served" build-web/model-refs build/attnviz
}

# [chain 2] The native build, its suite, the command line, the models, the desktop window.
chain_native() {
    step native-build build build --target all attn_tests
    step native-suite build/attn_tests
    step cli-native bash tests/cli_test.sh build/attnviz tests/data
    step exporter /usr/bin/python3 tests/test_exporter.py build/attnviz
    # The PyTorch references themselves (tests/model/reference.py), against torch.nn's layers.
    step model-reference /usr/bin/python3 tests/model/test_reference.py
    # attnviz run (SPEC.md §5) on the random-weight checkpoints against their PyTorch references.
    step model-run /usr/bin/python3 tests/model/test_run.py build/attnviz build/model-refs
    # GGUF files (attnviz run FILE.gguf): the reference forward on the dequantized weights, and
    # llama.cpp itself (node-llama-cpp) on the same files: logits and token ids.
    step gguf /usr/bin/python3 tests/model/test_gguf.py build/attnviz tests/model/llama_cpp/node_modules
    # transformers 5.17's own forward on checkpoints it wrote (tests/model/transformers5/: made on the H200 host)
    step transformers5 bash -c "/usr/bin/python3 tests/model/transformers_oracle.py write tests/model/transformers5 build/transformers5 && /usr/bin/python3 tests/model/transformers_oracle.py check build/attnviz build/transformers5"
    # Vision transformers (attnviz run --image): random-weight ViT checkpoints against their PyTorch
    # forward from a picture processed as PIL and NumPy do it; and the bad pictures and folders;
    # then against transformers 5.17's own classes on the same files (tests/model/transformers5-vision/:
    # made on the H200 host)
    step vision bash -c "/usr/bin/python3 tests/model/make_vision_models.py build/vision-refs && /usr/bin/python3 tests/model/test_vision.py build/attnviz build/vision-refs && /usr/bin/python3 tests/model/transformers_vision.py check build/attnviz build/vision-refs tests/model/transformers5-vision"
    # The why views on those checkpoints, every family (parts sum to the logit; lens; patching's last row)
    step why-families /usr/bin/python3 tests/model/test_why_families.py build/attnviz build/transformers5
    # Its experiments (--knockout, --hide-token, --generate) against the same references, there and
    # on the shipped models.
    step model-experiments /usr/bin/python3 tests/model/test_experiments.py build/attnviz build/model-refs models
    # The why views (--lens, --attribute, --contrast, --corrupted) against the same references'
    # hooks, there and on tiny-circuits and tiny-lm.
    step model-why /usr/bin/python3 tests/model/test_why.py build/attnviz build/model-refs models
    # The models that ship (models/, docs/MODELS.md): held-out loss, head scores, the translator's
    # accuracy and alignment, and attnviz run against the PyTorch code that trained them.
    step shipped-models /usr/bin/python3 tests/model/test_models.py build/attnviz
    # Models by name (SPEC.md §6): attnviz run ORG/NAME against a stand-in of the Hub on 127.0.0.1.
    step hub /usr/bin/python3 tests/hub/test_hub.py build/attnviz build/model-refs
    # attnviz.serve() (issue 51): a model torch runs, its maps asked over HTTP, against attnviz run; the guards;
    # the same model split by heads over 2 ranks (torch.distributed on the CPU), rank 0 serving.
    # transformers' own classes where transformers is installed (the device machine); it says it skipped elsewhere.
    step serve bash -c "/usr/bin/python3 tests/serve/test_serve.py build/attnviz build/model-refs && /usr/bin/python3 tests/serve/test_serve_tp.py build/attnviz build/model-refs && /usr/bin/python3 tests/serve/test_serve_transformers.py"
    # The house's rules (docs/ARCHITECTURE.md): no mutable static in core/, web/ or main/.
    step house-statics python3 tests/house/mutable_statics.py build core web main build/generated
    step desktop bash tests/desktop/desktop_test.sh build "$artifacts/desktop"
}

# [chain 3] One clang-14 build with ASan + UBSan (UB is fatal there: -fno-sanitize-recover=all) and
# libFuzzer's coverage: the suite, the command line and the fuzz targets. Debug information is
# line tables only, what a sanitizer's report needs (full -g took 15 % longer to compile).
chain_sanitize() {
    step sanitize-build build build-fuzz -DATTN_APP=OFF -DATTN_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-14 \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" --target all attn_tests
    step sanitize-suite env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build-fuzz/attn_tests
    step sanitize-cli bash tests/cli_test.sh build-fuzz/attnviz tests/data
    step sanitize-model-run /usr/bin/python3 tests/model/test_run.py build-fuzz/attnviz build-fuzz/model-refs
}

# [chain 4] The fuzzers, one after another (each is single-threaded), from the sanitized build.
chain_fuzz() {
    after sanitize-build
    step fuzz-scene fuzz fuzz_scene scene
    step fuzz-import fuzz fuzz_import import
    step fuzz-tokenizer fuzz fuzz_tokenizer tokenizer
    # The model runtime's readers: a checkpoint (header, offsets, conversion, the loader and a
    # forward of a tiny GPT-2) and config.json.
    step fuzz-safetensors fuzz fuzz_safetensors safetensors
    step fuzz-config fuzz fuzz_config config
    # The tokenizers: their files and any text.
    step fuzz-bpe fuzz fuzz_bpe bpe
    step fuzz-wordpiece fuzz fuzz_wordpiece wordpiece
    step fuzz-unigram fuzz fuzz_unigram unigram
    # tokenizer.json (every component, added tokens, the post-processor) and its regex engine.
    step fuzz-tokenizer-json fuzz fuzz_tokenizer_json tokenizer_json
    # Models by name: the Hub's listing and headers, a shards index, a typed Hub id.
    step fuzz-hub fuzz fuzz_hub hub
    # GGUF files: the container, the model it names, its tokenizer, the loader and a forward.
    step fuzz-gguf fuzz fuzz_gguf gguf
    # Chat templates: the Jinja engine, from the real templates.
    step fuzz-jinja fuzz fuzz_jinja jinja
}

rm -f "$artifacts"/*.status "$artifacts"/chain-*.steps
start=$SECONDS
chains=(wasm native sanitize fuzz)
for chain in "${chains[@]}"; do
    niceness=$(case $chain in wasm) echo 0 ;; native | sanitize) echo 5 ;; *) echo 10 ;; esac)
    ( renice -n "$niceness" -p "$BASHPID" > /dev/null; "chain_$chain" ) &
done
wait

echo "== summary ($((SECONDS - start)) s)"
passed=0 failed=0 failures=()
for chain in "${chains[@]}"; do
    while read -r name; do
        line=$(result "$name")
        echo "-- $name: $line"
        if [ "${line%% *}" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); fi
    done < "$artifacts/chain-$chain.steps"
done
for name in "${failures[@]}"; do
    # The lines that name a failure first (a long log's tail may not reach them), then its end.
    echo "== $name failed; its FAIL lines, then the end of artifacts/$name.log:"
    grep -E "^(FAIL|not ok)|FAILED|Error:" "$artifacts/$name.log" | head -n 20
    echo "…"
    tail -n 40 "$artifacts/$name.log"
done
[ ${#failures[@]} -eq 0 ] || echo "failed steps: ${failures[*]} (logs in artifacts/)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
