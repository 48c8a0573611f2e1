#!/usr/bin/env python3
"""Builds one self-contained HTML file from a built site: the page, its style and scripts, both
builds of the app (attnviz and attnviz-relaxed: their wasm and scripts, the page picks one as it
does online), the packaged fonts and the common CJK font inlined, so it opens from file://
(offline slides, notes) with nothing next to it.

usage: single_file.py SITE_DIR OUT.html

The built-in models (site/models/NAME/FILE, core/model/builtin.hpp) are inside too, as base64
by model and file name; the page hands them to the app as Module.attnvizInlineModels.

Fonts: ui.ttf and cjk-seeds.ttf (the packaged first-frame fonts) and fonts/cjk-common.ttf
(GB2312's 6763 hanzi, kana, CJK punctuation) are inside. The whole Droid Sans Fallback
(fonts/cjk-full.ttf, ~4 MB) is not: a character outside those draws as a box (docs/EMBED.md).
"""
import base64
import json
import pathlib
import sys

INLINE_FONTS = ["cjk-common.ttf"]
BUILDS = ["attnviz", "attnviz-relaxed"]  # SIMD128, relaxed SIMD (web/site/attnviz-page.js)


def script(text):
    # Inside <script>, only "</script" ends the element; "<\\/" means the same in JS strings.
    return "<script>\n" + text.replace("</script", "<\\/script") + "\n</script>"


def main():
    site, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    b64 = lambda p: base64.b64encode(p.read_bytes()).decode("ascii")
    page = (site / "index.html").read_text(encoding="utf-8")
    inline = {
        "wasm": {build: b64(site / f"{build}.wasm") for build in BUILDS},
        "js": {build: (site / f"{build}.js").read_text(encoding="utf-8") for build in BUILDS},
        "data": b64(site / "attnviz.data"),
        "fonts": {name: b64(site / "fonts" / name) for name in INLINE_FONTS if (site / "fonts" / name).exists()},
        "models": {model.name: {f.name: b64(f) for f in sorted(model.iterdir())}
                   for model in sorted((site / "models").iterdir()) if model.is_dir()} if (site / "models").is_dir() else {},
    }
    style = (site / "attnviz.css").read_text(encoding="utf-8")
    icon = "data:image/svg+xml;base64," + b64(site / "favicon.svg")
    replacements = {
        '<link rel="icon" href="favicon.svg" type="image/svg+xml">': f'<link rel="icon" href="{icon}">',
        '<link rel="stylesheet" href="attnviz.css">': "<style>\n" + style + "</style>",
        '<script src="attnviz-page.js"></script>':
            script("window.attnvizInline = " + json.dumps(inline) + ";") + "\n" +
            script((site / "attnviz-page.js").read_text(encoding="utf-8")),
    }
    for old, new in replacements.items():
        if old not in page:
            sys.exit(f"single_file.py: {site / 'index.html'} has no {old}")
        page = page.replace(old, new)
    out.write_text(page, encoding="utf-8")
    print(f"single_file.py: {out} ({out.stat().st_size / 1048576:.1f} MB)")


if __name__ == "__main__":
    main()
