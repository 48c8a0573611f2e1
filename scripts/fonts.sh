#!/usr/bin/env bash
# Builds the web fonts from the Debian font packages (fonts-dejavu-core, fonts-droid-fallback)
# with fontTools' subsetter (python3-fonttools).
#   usage: fonts.sh PRELOAD_DIR LAZY_DIR TEXT_SOURCE...
# PRELOAD_DIR (packaged with the page, needed by the first frame):
#   ui.ttf          DejaVu Sans: Latin, Greek, Cyrillic, punctuation, arrows, math, shapes
#   cjk-seeds.ttf   Droid Sans Fallback: every non-ASCII character of TEXT_SOURCE files (the
#                   presets) plus CJK punctuation and full-width forms
# LAZY_DIR (fetched by the page only when a character is missing):
#   cjk-common.ttf  GB2312's 6763 hanzi, kana, CJK punctuation, but those cjk-seeds.ttf has (it
#                   is merged first: a glyph comes from the first font that has it, fonts.cpp)
#   cjk-full.ttf    the whole Droid Sans Fallback
set -euo pipefail
preload=$1; lazy=$2; shift 2
dejavu=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
droid=/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf
python=
for candidate in /usr/bin/python3 python3; do
  if "$candidate" -c 'import fontTools.subset' 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || { echo "fonts.sh: needs python3-fonttools" >&2; exit 1; }
mkdir -p "$preload" "$lazy"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# Vertical metrics (vhea, vmtx) go too: ImGui lays text out horizontally (12 KB of a notebook
# output's base64 for cjk-common.ttf).
subset() { "$python" -m fontTools.subset "$@" --no-hinting --desubroutinize --layout-features='' \
             --drop-tables+=FFTM,vhea,vmtx 2>/dev/null; }

subset "$dejavu" --output-file="$preload/ui.ttf" \
  --unicodes="U+0020-024F,U+0370-03FF,U+0400-045F,U+1D00-1DBF,U+2000-206F,U+2070-209F,U+20AC,U+2100-214F,U+2190-21FF,U+2200-22FF,U+2300-23FF,U+2500-257F,U+25A0-25FF,U+2600-26FF,U+2700-27BF,U+FFFD"

# The characters of the presets, wherever they are written.
"$python" - "$tmp/seeds.txt" "$@" <<'PY'
import sys
out, sources = sys.argv[1], sys.argv[2:]
chars = set()
for path in sources:
    chars |= {c for c in open(path, encoding="utf-8", errors="replace").read() if ord(c) > 0x7f}
chars |= {chr(c) for c in range(0x3000, 0x3040)} | {chr(c) for c in range(0xff01, 0xff5f)}
open(out, "w", encoding="utf-8").write("".join(sorted(chars)))
PY
subset "$droid" --output-file="$preload/cjk-seeds.ttf" --text-file="$tmp/seeds.txt"

"$python" - "$tmp/common.txt" "$tmp/seeds.txt" <<'PY'
import sys
seeds = set(open(sys.argv[2], encoding="utf-8").read())
chars = []
for b1 in range(0xB0, 0xF8):
    for b2 in range(0xA1, 0xFF):
        try:
            chars.append(bytes([b1, b2]).decode("gb2312"))
        except UnicodeDecodeError:
            pass
chars += [chr(c) for c in range(0x3000, 0x3100)] + [chr(c) for c in range(0xff00, 0xffef)]
open(sys.argv[1], "w", encoding="utf-8").write("".join(c for c in chars if c not in seeds))
PY
subset "$droid" --output-file="$lazy/cjk-common.ttf" --text-file="$tmp/common.txt"
cp "$droid" "$lazy/cjk-full.ttf"
