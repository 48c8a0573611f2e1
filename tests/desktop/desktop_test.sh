#!/usr/bin/env bash
# Desktop end to end: the GLFW / OpenGL 3.3 window under Xvfb (Mesa llvmpipe) and
# `attnviz render` for every view, kind and theme; each picture must show a real figure.
#   bash tests/desktop/desktop_test.sh BUILD_DIR ARTIFACT_DIR
# Prints one line per check and ends with "desktop: N passed, M failed"; exits non-zero on failure.
set -uo pipefail
build=${1:?usage: desktop_test.sh BUILD_DIR ARTIFACT_DIR}
artifacts=${2:?usage: desktop_test.sh BUILD_DIR ARTIFACT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
app="$build/attnviz"
mkdir -p "$artifacts"
artifacts=$(cd "$artifacts" && pwd)
passed=0; failed=0
ok()   { echo "ok    $1"; passed=$((passed + 1)); }
fail() { echo "FAIL  $1: $2"; failed=$((failed + 1)); }

# Colour statistics of a PNG (imagemagick): "WIDTH HEIGHT COLOURS STDDEV" with STDDEV in 0..1.
stats() { convert "$1" -format '%w %h %k %[fx:standard_deviation]' info: 2>/dev/null; }
# RGB of one pixel as "R G B" (0..255).
rgb_at() { convert "$1" -format "%[fx:int(255*p{$2,$3}.r)] %[fx:int(255*p{$2,$3}.g)] %[fx:int(255*p{$2,$3}.b)]" info: 2>/dev/null; }

# A picture is "not blank" when it has many colours and real contrast.
check_picture() {  # name file min_width min_height
  local name=$1 file=$2 w h colours sd
  if [ ! -s "$file" ]; then fail "$name" "no picture written"; return; fi
  read -r w h colours sd < <(stats "$file")
  if [ -z "${w:-}" ]; then fail "$name" "not a readable image"; return; fi
  if [ "$w" -lt "$3" ] || [ "$h" -lt "$4" ]; then fail "$name" "size ${w}x${h}"; return; fi
  if [ "$colours" -lt 64 ] || awk "BEGIN{exit !($sd < 0.04)}"; then
    fail "$name" "looks blank (${colours} colours, stddev ${sd})"; return
  fi
  ok "$name (${w}x${h}, ${colours} colours)"
}

if [ ! -x "$app" ]; then
  echo "FAIL  setup: $app not built"; echo "desktop: 0 passed, 1 failed"; exit 1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/i_am_good.json" <<'EOF'
{"name": "i-am-good", "kind": "self", "tokens": ["I", "am", "good"],
 "embeddings": [[1, 3, 2], [1, 1, 3], [1, 2, 1]], "weights": "identity", "scale": "none"}
EOF
cat > "$tmp/masked.json" <<'EOF'
{"kind": "masked", "tokens": "The cat sat on the mat", "d_model": 8, "heads": 2, "weights": {"seed": 3}}
EOF
cat > "$tmp/cross.json" <<'EOF'
{"kind": "cross", "tokens": "It rained heavily that day", "source_tokens": "那天雨很大",
 "d_model": 8, "heads": 2, "weights": {"seed": 7}}
EOF
cat > "$tmp/emoji.json" <<'EOF'
{"kind": "self", "tokens": "I ❤ 🍎 and 我爱你", "d_model": 4, "heads": 1}
EOF
echo '{"tokens": ["a", "b"], "heads": 3' > "$tmp/bad.json"

run_x() { xvfb-run -a -s "-screen 0 1280x800x24" "$@"; }

# window.sh APP OUT ARGS… (under an X server): opens `APP ARGS…` in a window and captures the screen
# until two captures in a row (one after the other, no pause) are alike and not blank: the UI is
# drawn. With WINDOW_READY set (a shell command), only pictures captured once it succeeds count: a
# fetch shows a steady "fetching" frame on a slow machine. At most 60 s. Writes the last capture to
# OUT, then closes the window. Exit 0: captured with the app still running; 3: the app ended by
# itself; 4: no steady, non-blank picture in time.
cat > "$tmp/window.sh" <<'EOF'
app=$1 out=$2
shift 2
"$app" "$@" & pid=$!
deadline=$((SECONDS + 60)) previous='' code=4
while [ "$SECONDS" -lt "$deadline" ]; do
  if ! kill -0 "$pid" 2>/dev/null; then code=3; break; fi
  if [ -n "${WINDOW_READY:-}" ] && ! bash -c "$WINDOW_READY"; then sleep 0.2; continue; fi
  if import -window root "$out.new.png" 2>/dev/null; then
    read -r colours sd < <(convert "$out.new.png" -format '%k %[fx:standard_deviation]' info: 2>/dev/null)
    sum=$(convert "$out.new.png" -depth 8 rgb:- 2>/dev/null | md5sum)
    mv "$out.new.png" "$out"
    if [ "${colours:-0}" -ge 64 ] && awk "BEGIN{exit !(${sd:-0} >= 0.04)}" && [ "$sum" = "$previous" ]; then
      code=0; break
    fi
    previous=$sum
  fi
done
if [ "$code" -eq 0 ] && ! kill -0 "$pid" 2>/dev/null; then code=3; fi
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
exit "$code"
EOF
window_check() {  # name file out [options…]: the window opens, draws a steady picture and stays up until closed
  local name=$1 file=$2 out=$3 code
  shift 3
  rm -f "$out"
  run_x bash "$tmp/window.sh" "$app" "$out" "$file" "$@" > "$tmp/window.log" 2>&1; code=$?
  case $code in
    0) check_picture "$name" "$out" 1280 800 ;;
    3) fail "$name" "the app ended by itself: $(tail -c 300 "$tmp/window.log")" ;;
    *) fail "$name" "no steady, non-blank picture within 60 s (last capture in $out)" ;;
  esac
}

# 1. The window (`attnviz SCENE.json`): opens with that scene, draws the UI, stays up until closed.
window_check "window under Xvfb shows the UI" "$tmp/cross.json" "$artifacts/desktop-window.png"
if [ -s "$artifacts/desktop-window.png" ]; then
  # The controls panel (left) and the figure (right) are both drawn: neither side is flat.
  left=$(convert "$artifacts/desktop-window.png" -crop 330x780+10+10 +repage -format '%k' info:)
  right=$(convert "$artifacts/desktop-window.png" -crop 880x700+380+60 +repage -format '%k' info:)
  if [ "$left" -gt 16 ] && [ "$right" -gt 16 ]; then ok "window has controls and a figure ($left / $right colours)"
  else fail "window layout" "controls $left colours, figure $right colours"; fi
fi

# 1b. `attnviz FOLDER`: a model run live (a random-weight GPT-2 of tests/model/make_models.py,
# which the build writes to BUILD_DIR/model-refs): the window opens on its model view.
model_dir="$build/model-refs/gpt2_l3_h4_d32_f16"
if [ -d "$model_dir" ]; then
  window_check "window runs a model folder live" "$model_dir" "$artifacts/desktop-model.png"
else
  fail "window runs a model folder live" "$model_dir is missing (the build writes it)"
fi

# 1b'. `attnviz ORG/NAME`: a Hub id (SPEC.md §6), fetched in the window from a stand-in of the Hub
# (tests/hub/hub_server.py, serving the same folder) into HF_HOME, then run live.
if [ -d "$model_dir" ]; then
  python3 "$here/../hub/hub_server.py" "attnviz-test/gpt2=$model_dir" > "$tmp/hub.txt" 2>&1 & hub_pid=$!
  for _ in $(seq 100); do [ -s "$tmp/hub.txt" ] && break; sleep 0.1; done
  HF_HOME="$tmp/hf" HF_ENDPOINT=$(cut -d ' ' -f 1 "$tmp/hub.txt") \
    WINDOW_READY="[ -s $tmp/hf/hub/models--attnviz-test--gpt2/refs/main ]" window_check "window fetches a Hub id (attnviz ORG/NAME) and runs it live" attnviz-test/gpt2 "$artifacts/desktop-hub.png"
  kill "$hub_pid"; wait "$hub_pid" 2>/dev/null
  fetched=$(ls "$tmp"/hf/hub/models--attnviz-test--gpt2/snapshots/*/ 2>/dev/null | tr '\n' ' ')
  if [ "$fetched" = "config.json merges.txt model.safetensors vocab.json " ]; then ok "the window fetched the model's files into HF_HOME ($fetched)"
  else fail "the window's fetch" "the snapshot holds: ${fetched:-nothing}"; fi
fi

# 1b''. `attnviz FOLDER --image FILE`: a vision model (tests/model/make_vision_models.py's DINOv2 with
# registers, written by the vision step) on its picture: the window opens on it; a file that is no
# picture is one line and exit 2.
vision_dir="$build/vision-refs/dinov2-registers"
if [ -d "$vision_dir" ]; then
  window_check "window runs a vision model on --image" "$vision_dir" "$artifacts/desktop-image.png" --image "$vision_dir/image.png"
  run_x timeout 60 "$app" "$vision_dir" --image "$vision_dir/config.json" > /dev/null 2> "$tmp/image.err"; code=$?
  if [ "$code" -eq 2 ] && [ "$(wc -l < "$tmp/image.err")" -eq 1 ] && grep -q "config.json" "$tmp/image.err"; then
    ok "--image with a file that is no picture: $(cat "$tmp/image.err")"
  else fail "--image with no picture" "exit $code: $(head -c 300 "$tmp/image.err")"; fi
else
  fail "window runs a vision model on --image" "$vision_dir is missing (the vision step writes it)"
fi

# 1c. `attnviz induction`: a live scene runs the built-in tiny-circuits compiled into the program.
window_check "window runs the live scene induction (tiny-circuits, compiled in)" induction "$artifacts/desktop-induction.png"

# 2. attnviz render, every view and kind.
render() {  # name scene view theme [extra args]
  local name=$1 scene=$2 view=$3 theme=$4; shift 4
  local out="$artifacts/render-$name.png"
  rm -f "$out"
  if run_x "$app" render "$scene" --view "$view" --theme "$theme" --png "$out" "$@" 2> "$tmp/render.err"; then
    check_picture "render $name" "$out" "${W:-1200}" "${H:-800}"
  else
    fail "render $name" "exit $?: $(head -c 300 "$tmp/render.err")"
  fi
}
render heatmap-self "$tmp/i_am_good.json" heatmap light
render lines-self "$tmp/i_am_good.json" lines dark
render heatmap-masked "$tmp/masked.json" heatmap light
render lines-masked "$tmp/masked.json" lines light
render lines-cross "$tmp/cross.json" lines dark
render heatmap-cross "$tmp/cross.json" heatmap dark
render steps-self "$tmp/i_am_good.json" steps light
render steps-masked "$tmp/masked.json" steps light
render steps-cross "$tmp/cross.json" steps dark
W=800 H=500 render heatmap-small "$tmp/emoji.json" heatmap light --width 800 --height 500
W=2400 H=1600 render heatmap-2x "$tmp/i_am_good.json" heatmap light --width 2400 --height 1600 --scale 2

# Without any display: the render command needs no X server (EGL, Mesa's surfaceless platform).
rm -f "$artifacts/render-no-display.png"
if env -u DISPLAY -u WAYLAND_DISPLAY "$app" render "$tmp/cross.json" --view heatmap --png "$artifacts/render-no-display.png" \
     2> "$tmp/nodisplay.err"; then
  check_picture "render without a display (EGL)" "$artifacts/render-no-display.png" 1200 800
else
  fail "render without a display" "$(head -c 300 "$tmp/nodisplay.err")"
fi

# The masked heatmap really shows the causal triangle: every cell above the diagonal is a
# neutral grey hatch, every cell on or below it a colormap colour (--layout gives the grid).
if run_x "$app" render "$tmp/masked.json" --view heatmap --png "$tmp/m.png" --layout "$tmp/m.json" 2>/dev/null; then
  verdict=$(python3 - "$tmp/m.png" "$tmp/m.json" <<'PY'
import json, subprocess, sys
png, layout = sys.argv[1], json.load(open(sys.argv[2]))
gx, gy, gw, gh = layout["grid"]
T = len(layout["queries"])
cw, ch = gw / T, gh / T
width = int(subprocess.check_output(["convert", png, "-format", "%w", "info:"]))
raw = subprocess.check_output(["convert", png, "-depth", "8", "rgb:-"])
def px(x, y):
    i = (int(y) * width + int(x)) * 3
    return raw[i], raw[i + 1], raw[i + 2]
bad = []
for q in range(T):
    for k in range(T):
        patch = [px(gx + k * cw + cw * (0.12 + 0.02 * a), gy + q * ch + ch * (0.12 + 0.02 * b))
                 for a in range(10) for b in range(10)]
        grey = all(max(p) - min(p) < 24 for p in patch)
        tones = len({sum(p) // 24 for p in patch})
        masked = grey and tones >= 2
        if masked != (k > q):
            bad.append(f"({q},{k})")
print("ok" if not bad else "cells " + " ".join(bad) + " wrong")
PY
)
  if [ "$verdict" = ok ]; then ok "render: masked heatmap shows the causal triangle (hatched above the diagonal)"
  else fail "render: causal triangle" "$verdict"; fi
else
  fail "render: causal triangle" "render failed"
fi

# The Steps view draws every matrix of the pipeline where --layout says, in order; the softmax
# of i-am-good (no scaling) is nearly one-hot, so its row I starts with a bright cell.
if run_x "$app" render "$tmp/i_am_good.json" --view steps --png "$tmp/s.png" --layout "$tmp/s.json" 2>/dev/null; then
  verdict=$(python3 - "$tmp/s.json" <<'PY'
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
want = ["x", "q", "k", "v", "scores", "scaled", "weights", "output", "concat", "final"]
missing = [w for w in want if w not in steps or steps[w][2] <= 0]
print("ok" if not missing else "missing " + " ".join(missing))
PY
)
  if [ "$verdict" = ok ]; then ok "render: steps view lays out the whole pipeline"
  else fail "render: steps layout" "$verdict"; fi
else
  fail "render: steps layout" "render failed"
fi

# 2b. attnviz render --svg (core/svg/svg.cpp): no GL needed, so no display either. Well-formed XML with
# one element per line / cell / label, the mask hatched; drawn by Chromium it is a real picture.
svg_check() {  # name svg-file expectations (python expressions over counts c and the root r)
  /usr/bin/python3 - "$2" "$3" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
try:
    r = ET.parse(sys.argv[1]).getroot()
except Exception as e:
    print(f"not well-formed: {e}"); sys.exit()
def n(tag, cls):
    return sum(1 for e in r.iter("{http://www.w3.org/2000/svg}" + tag) if cls in (e.get("class") or "").split())
c = {"line": n("line", "line"), "cell": n("rect", "cell"), "masked": n("rect", "masked"), "query": n("rect", "query"),
     "key": n("rect", "key"), "row": n("text", "row-label"), "col": n("text", "col-label"),
     "pattern": len(r.findall(".//s:pattern", ns)), "texts": " ".join("".join(t.itertext()) for t in r.iter("{http://www.w3.org/2000/svg}text"))}
bad = [x for x in sys.argv[2].split(";") if not eval(x, {}, {"c": c, "r": r})]
print("ok" if not bad else "failed: " + "; ".join(bad) + f" (counts {dict((k, v) for k, v in c.items() if k != 'texts')})")
PY
}
svg_case() {  # name scene view expectations [extra args]
  local name=$1 scene=$2 view=$3 want=$4; shift 4
  local out="$artifacts/render-$name.svg" verdict
  rm -f "$out"
  if env -u DISPLAY -u WAYLAND_DISPLAY "$app" render "$scene" --view "$view" --svg "$out" "$@" 2> "$tmp/svg.err"; then
    verdict=$(svg_check "$name" "$out" "$want")
    if [ "$verdict" = ok ]; then ok "render --svg $name ($(wc -c < "$out") bytes)"; else fail "render --svg $name" "$verdict"; fi
  else
    fail "render --svg $name" "exit $?: $(head -c 300 "$tmp/svg.err")"
  fi
}
svg_case heatmap-self "$tmp/i_am_good.json" heatmap "c['cell'] == 9;c['masked'] == 0;c['row'] == 3;c['col'] == 3;r.get('data-view') == 'heatmap'"
svg_case lines-self "$tmp/i_am_good.json" lines "c['line'] == 9;c['query'] == 3;c['key'] == 3"
# masked.json: 6 tokens, causal: 21 visible pairs, 15 hatched; 2 heads → 42 lines.
svg_case heatmap-masked "$tmp/masked.json" heatmap "c['cell'] == 36;c['masked'] == 15;c['pattern'] == 1;c['row'] == 6"
svg_case lines-masked "$tmp/masked.json" lines "c['line'] == 42;c['query'] == 6;c['key'] == 6" --theme dark
svg_case lines-cross-zh "$tmp/cross.json" lines "'查询' in c['texts'];'那' in c['texts'];c['line'] == 2 * 5 * 5" --lang zh
# Drawn by Chromium (imagemagick has no SVG reader here): not blank, the hatch visible.
if [ -s "$artifacts/render-heatmap-masked.svg" ]; then
  size=$(grep -o '<svg[^>]*' "$artifacts/render-heatmap-masked.svg" | grep -o 'width="[0-9]*" height="[0-9]*"' | tr -dc '0-9 ' | awk '{print $1","$2}')
  timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$tmp/chromium" \
    --window-size="$size" --screenshot="$artifacts/render-heatmap-masked-svg.png" \
    "file://$artifacts/render-heatmap-masked.svg" > /dev/null 2>&1
  check_picture "render --svg heatmap-masked drawn by Chromium" "$artifacts/render-heatmap-masked-svg.png" 200 200
fi
# PNG and SVG from one command; steps has no SVG (exit 2, nothing written).
rm -f "$tmp/both.png" "$tmp/both.svg"
if run_x "$app" render "$tmp/cross.json" --view heatmap --png "$tmp/both.png" --svg "$tmp/both.svg" 2>/dev/null &&
   [ -s "$tmp/both.png" ] && [ -s "$tmp/both.svg" ]; then ok "render --png and --svg together write both"
else fail "render --png --svg" "missing output"; fi
"$app" render "$tmp/i_am_good.json" --view steps --svg "$tmp/steps.svg" 2> "$tmp/steps.err"; code=$?
if [ "$code" -eq 2 ] && [ ! -e "$tmp/steps.svg" ]; then ok "render --svg rejects the steps view: $(head -n 1 "$tmp/steps.err")"
else fail "render --svg steps" "exit $code"; fi

# 2c. The SVG sits where the screen draws (one layout per view, core/figure): one command writes
# the PNG, the SVG and --layout (the rectangles the screen's views drew: query_rects, key_rects,
# grid); every token box and cell of the SVG must match them within 0.5 px. Then the SVG drawn
# by Chromium must be the PNG's picture: under 2 % of the pixels may differ (text antialiasing,
# the hatch's phase).
python3 - > "$tmp/long.json" <<'PY'
import json
print(json.dumps({"name": "long", "kind": "masked", "tokens": " ".join(f"w{i}" for i in range(150)), "d_model": 8, "heads": 2,
                  "weights": {"seed": 3}}))
PY
svg_vs_screen() {  # name view [render args...]
  local name=$1 view=$2 verdict; shift 2
  local png="$artifacts/same-$name.png" svg="$artifacts/same-$name.svg" json="$tmp/same-$name.json"
  rm -f "$png" "$svg" "$json"
  if ! run_x "$app" render "$@" --view "$view" --png "$png" --svg "$svg" --layout "$json" 2> "$tmp/same.err"; then
    fail "svg = screen $name" "render failed: $(head -c 300 "$tmp/same.err")"; return
  fi
  verdict=$(/usr/bin/python3 - "$svg" "$json" "$view" <<'PY'
import json, sys, xml.etree.ElementTree as ET
svg, layout, view = ET.parse(sys.argv[1]).getroot(), json.load(open(sys.argv[2])), sys.argv[3]
S = "{http://www.w3.org/2000/svg}"
def cls(e): return (e.get("class") or "").split()
def num(e, a): return float(e.get(a))
worst, checked, problems = 0.0, 0, []
def near(got, want, what):
    global worst, checked
    worst = max(worst, abs(got - want)); checked += 1
    if abs(got - want) > 0.5 and len(problems) < 5: problems.append(f"{what}: svg {got:.2f}, screen {want:.2f}")
if [int(svg.get("width")), int(svg.get("height"))] != [int(layout["figure"][0] * 2 + layout["figure"][2]), int(layout["figure"][1] + layout["figure"][3] + layout["figure"][0])]:
    problems.append(f"SVG {svg.get('width')}x{svg.get('height')} for a figure box {layout['figure']}")
near_box = lambda e, r, what: [near(num(e, "x"), r[0], what + " x"), near(num(e, "y"), r[1], what + " y"),
                               near(num(e, "width"), r[2], what + " w"), near(num(e, "height"), r[3], what + " h")]
T_q, T_k = len(layout["queries"]), len(layout["keys"])
if view == "lines":
    boxes = [e for e in svg.iter(S + "rect") if "token" in cls(e)]
    rails = [e for e in svg.iter(S + "rect") if "rail" in cls(e)]
    for e in boxes:
        rects = layout["query_rects"] if "query" in cls(e) else layout["key_rects"]
        near_box(e, rects[int(e.get("data-index"))], ("query " if "query" in cls(e) else "key ") + e.get("data-index"))
    if rails:  # compact: each rail spans its side's rows
        for e, rects in zip(rails, (layout["query_rects"], layout["key_rects"])):
            near_box(e, [rects[0][0], rects[0][1], rects[0][2], rects[-1][1] + rects[-1][3] - rects[0][1]], "rail")
    elif len(boxes) != T_q + T_k: problems.append(f"{len(boxes)} token boxes, want {T_q + T_k}")
else:
    cells = [e for e in svg.iter(S + "rect") if "cell" in cls(e)]
    if len(cells) != T_q * T_k: problems.append(f"{len(cells)} cells, want {T_q * T_k}")
    for e in cells:
        q, k = int(e.get("data-q")), int(e.get("data-k"))
        qr, kr = layout["query_rects"][q], layout["key_rects"][k]
        near_box(e, [kr[0], qr[1], kr[2], qr[3]], f"cell ({q},{k})")
    g = layout["grid"]
    near(min(num(e, "x") for e in cells), g[0], "grid x"); near(min(num(e, "y") for e in cells), g[1], "grid y")
    near(max(num(e, "x") + num(e, "width") for e in cells), g[0] + g[2], "grid right")
    near(max(num(e, "y") + num(e, "height") for e in cells), g[1] + g[3], "grid bottom")
print(("ok" if not problems else "; ".join(problems)) + f" ({checked} positions, largest deviation {worst:.3f} px)")
PY
)
  case $verdict in ok*) ok "svg = screen $name: ${verdict#ok }";; *) fail "svg = screen $name" "$verdict";; esac
  # The SVG drawn by Chromium against the PNG, pixel by pixel.
  local size drawn="$artifacts/same-$name-svg.png"
  size=$(/usr/bin/python3 -c "import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); print(r.get('width')+','+r.get('height'))" "$svg")
  rm -f "$drawn"
  timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking --disable-component-update \
    --disable-sync --disable-quic --hide-scrollbars --force-device-scale-factor=1 --user-data-dir="$tmp/chromium-same" \
    --window-size="$size" --screenshot="$drawn" "file://$svg" > /dev/null 2>&1
  verdict=$(/usr/bin/python3 - "$png" "$drawn" <<'PY'
import subprocess, sys, numpy as np
def load(p):
    w, h = map(int, subprocess.check_output(["convert", p, "-format", "%w %h", "info:"]).split())
    return np.frombuffer(subprocess.check_output(["convert", p, "-depth", "8", "rgb:-"]), np.uint8).reshape(h, w, 3).astype(int)
try:
    a, b = load(sys.argv[1]), load(sys.argv[2])
except Exception as e:
    print(f"unreadable: {e}"); sys.exit()
if a.shape != b.shape: print(f"sizes {a.shape} and {b.shape}"); sys.exit()
share = 100.0 * (np.abs(a - b).max(axis=2) > 32).mean()
print(("ok" if share < 2.0 else "differ:") + f" {share:.2f} % of pixels differ by more than 32 of 255")
PY
)
  case $verdict in ok*) ok "svg drawn = png $name: ${verdict#ok }";; *) fail "svg drawn = png $name" "$verdict";; esac
}
data_dir="$here/../data"
for preset in i-am-good masked-apple cross-rain multi-head-rain; do
  svg_vs_screen "$preset-lines" lines --preset "$preset"
  svg_vs_screen "$preset-heatmap" heatmap --preset "$preset" --theme dark
done
svg_vs_screen import-gpt-lines lines "$data_dir/ui_import_gpt.json" --theme dark
svg_vs_screen import-gpt-heatmap heatmap "$data_dir/ui_import_gpt.json"
svg_vs_screen long-lines-rails lines "$tmp/long.json"
svg_vs_screen multi-head-lines-scale-1.25 lines --preset multi-head-rain --scale 1.25 --width 1000 --height 700
svg_vs_screen masked-heatmap-scale-2 heatmap --preset masked-apple --scale 2 --width 1600 --height 1200 --lang zh

# 3. Bad input: exit 2 with one line naming the problem; no picture.
rm -f "$tmp/bad.png"
run_x "$app" render "$tmp/bad.json" --view heatmap --png "$tmp/bad.png" 2> "$tmp/bad.err"; code=$?
lines=$(wc -l < "$tmp/bad.err")
if [ "$code" -eq 2 ] && [ "$lines" -ge 1 ] && [ ! -e "$tmp/bad.png" ]; then ok "render rejects a bad scene: $(head -n 1 "$tmp/bad.err")"
else fail "render bad scene" "exit $code, stderr: $(head -c 200 "$tmp/bad.err")"; fi
run_x "$app" render "$tmp/i_am_good.json" --view nope --png "$tmp/x.png" 2> /dev/null; code=$?
if [ "$code" -eq 2 ]; then ok "render rejects an unknown view"; else fail "render --view nope" "exit $code"; fi

# 4. Imported attention (SPEC.md §3): the window opens a model file given on the command line
# (a dropped file takes the same path: open_file_path), and render draws the model view.
data="$here/../data"
window_check "window opens an import file (attnviz MODEL.json)" "$data/ui_import_gpt.json" "$artifacts/desktop-import-window.png"
render model-gpt-dark "$data/ui_import_gpt.json" model dark
render model-gpt-light "$data/ui_import_gpt.json" model light
render model-t5-light "$data/ui_import_t5.json" model light
render heatmap-import "$data/ui_import_gpt.json" heatmap light
render lines-import "$data/ui_import_bert.json" lines dark
render steps-import "$data/ui_import_gpt.json" steps light
# The model view lays out layers × heads thumbnails; the heatmap holds the file's layer 1, head 1.
if run_x "$app" render "$data/ui_import_gpt.json" --view model --png "$tmp/i.png" --layout "$tmp/i.json" 2>/dev/null; then
  verdict=$(python3 - "$tmp/i.json" "$data/ui_import_gpt.json" <<'PY'
import json, sys
layout, model = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
thumbs = [w for w in layout["widgets"] if w.startswith("thumb.")]
shown, want = layout["import"]["shown"], model["attention"][0][0]
diff = max(abs(a - b) for r, s in zip(shown, want) for a, b in zip(r, s))
problems = []
if len(thumbs) != 12: problems.append(f"{len(thumbs)} thumbnails, want 12")
if diff > 1e-5: problems.append(f"layer 1 head 1 differs by {diff}")
if layout["kind"] != "masked": problems.append("kind " + layout["kind"])
print("ok" if not problems else "; ".join(problems))
PY
)
  if [ "$verdict" = ok ]; then ok "render: model view has 3 × 4 thumbnails, the figure holds the file's weights"
  else fail "render: model view layout" "$verdict"; fi
else
  fail "render: model view layout" "render failed"
fi
run_x "$app" render "$data/ui_import_bad_shape.json" --view model --png "$tmp/bad.png" 2> "$tmp/bad.err"; code=$?
if [ "$code" -eq 2 ] && grep -q 'attention\[1\]\[0\]\[2\]' "$tmp/bad.err" && [ ! -e "$tmp/bad.png" ]; then
  ok "render rejects a mis-shaped import file: $(head -n 1 "$tmp/bad.err")"
else fail "render bad import" "exit $code, stderr: $(head -c 200 "$tmp/bad.err")"; fi

echo "desktop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
