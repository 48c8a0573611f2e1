#!/usr/bin/env bash
# Rebuilds the models that ship with attnviz (models/tiny-lm, models/tiny-translator) from the
# text of Debian packages, deterministically (fixed seeds): docs/MODELS.md says what they are.
#   bash scripts/train_models.sh [OUT]      (OUT defaults to models/; run as root on Debian bookworm)
# The two train side by side, as the shipped ones did: about 27 minutes on this 2-core machine
# (docs/MODELS.md). The runtime files' sha256 go to OUT/SHA256SUMS.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/models}
packages=(python3-torch python3-numpy python3-regex python3-sentencepiece libopenblas0-pthread
          bible-kjv bible-kjv-text fortunes fortunes-zh)
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
/usr/bin/python3 "$here/training/tiny_lm.py" "$out/tiny-lm" > "$log" 2>&1 &
lm=$!
/usr/bin/python3 "$here/training/tiny_translator.py" "$out/tiny-translator"
wait $lm || { cat "$log"; exit 1; }
tail -1 "$log"
(cd "$out" && sha256sum */model.safetensors */config.json */vocab.json */merges.txt */*.spm > SHA256SUMS)  # what the runtime reads
echo "train_models: both models in $out in $((SECONDS - start)) s"
