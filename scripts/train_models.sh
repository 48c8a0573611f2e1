#!/usr/bin/env bash
# Rebuilds the models that ship with attnviz (models/tiny-lm, models/tiny-circuits,
# models/tiny-translator, models/tiny-vit) from the text and fonts of Debian packages,
# deterministically (fixed seeds): docs/MODELS.md says what they are.
#   bash scripts/train_models.sh [OUT [NAME…]]   (OUT defaults to models/, NAME to all four;
#                                                run as root on Debian bookworm)
# tiny-lm and tiny-translator train side by side, as the shipped ones did (about 27 minutes on
# this 2-core machine), then tiny-circuits alone (about 15 minutes), then tiny-vit alone (about
# 20 minutes on one thread; docs/MODELS.md). The runtime
# files' sha256 go to OUT/SHA256SUMS.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/models}
shift || true
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(tiny-lm tiny-translator tiny-circuits tiny-vit)
wanted() { [[ " ${names[*]} " == *" $1 "* ]]; }
packages=(python3-torch python3-numpy python3-regex python3-sentencepiece libopenblas0-pthread
          bible-kjv bible-kjv-text fortunes fortunes-zh python3-pil fonts-dejavu-core fonts-dejavu-extra fonts-mathjax)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# the thread counts are torch's and OpenBLAS's defaults on 2 cores, as when the shipped models were trained
start=$SECONDS
log=$(mktemp)
if wanted tiny-lm; then /usr/bin/python3 "$here/training/tiny_lm.py" "$out/tiny-lm" > "$log" 2>&1 & fi
if wanted tiny-translator; then /usr/bin/python3 "$here/training/tiny_translator.py" "$out/tiny-translator"; fi
if wanted tiny-lm; then wait $! || { cat "$log"; exit 1; }; tail -1 "$log"; fi
if wanted tiny-circuits; then /usr/bin/python3 "$here/training/tiny_circuits.py" "$out/tiny-circuits"; fi
if wanted tiny-vit; then /usr/bin/python3 "$here/training/tiny_vit.py" "$out/tiny-vit"; fi
(cd "$out" && shopt -s nullglob && sha256sum */model.safetensors */config.json */vocab.json */merges.txt */tokenizer.json */*.spm */preprocessor_config.json */example-*.png > SHA256SUMS)  # what the runtime reads
echo "train_models: ${names[*]} in $out in $((SECONDS - start)) s"
