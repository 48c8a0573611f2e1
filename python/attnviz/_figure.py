"""A figure as one self-contained piece of HTML (web/site/attnviz-notebook.js reads it).

[SECTION] The app in the package
[SECTION] The link's parameters
[SECTION] The attention as .safetensors
[SECTION] The figure
"""
import base64
import functools
import gzip
import hashlib
import html
import json
import pathlib
import re
import struct
import urllib.parse
import uuid

import numpy as np

from ._fonts import thin_font

# [SECTION] The app in the package ----------------------------------------------------------

APP = pathlib.Path(__file__).parent / "app"  # the web build's files, copied in by the wheel
APP_FILES = ("attnviz.js", "attnviz.wasm", "attnviz.data", "attnviz-embed.js", "attnviz-notebook.js")
CJK_FONT = "fonts/cjk-common.ttf"  # GB2312's hanzi, kana, CJK punctuation: loaded when a character is missing
# What the first-frame fonts (attnviz.data) may lack: CJK radicals … Yi, CJK compatibility, full-width forms.
CJK = re.compile("[\u2e80-\ua4cf\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")


def _app_file(name):
    path = APP / name
    if not path.is_file():
        raise RuntimeError(f"attnviz: {path} is missing: build the web app (scripts/run.sh), then pip install ./python again")
    return path.read_bytes()


def _packed(data):
    """base64 of gzip at its best compression (each output carries it), the same bytes every time (no time stamp)."""
    return base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")


@functools.lru_cache(maxsize=1)
def _app():
    """The app as every output carries it: compressed once per process."""
    files = {name: _app_file(name) for name in APP_FILES}
    version = hashlib.sha256(b"".join(files[name] for name in APP_FILES[:3])).hexdigest()[:16]
    boot = files["attnviz-embed.js"].decode() + "\n" + files["attnviz-notebook.js"].decode()
    return {"version": version, "js": _packed(files["attnviz.js"]), "wasm": _packed(files["attnviz.wasm"]),
            "data": _packed(files["attnviz.data"])}, boot


@functools.lru_cache(maxsize=8)
def _cjk_font(characters=None):
    """The CJK font packed: whole (None: the text is typed in the output), or only `characters`' glyphs."""
    font = _app_file(CJK_FONT)
    return _packed(font if characters is None else thin_font(font, characters))


def builtin_models():
    """The models that ship with attnviz (their folders in the package)."""
    folder = APP / "models"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def _model_files(name):
    folder = APP / "models" / name
    return {f.name: base64.b64encode(f.read_bytes()).decode("ascii") for f in sorted(folder.iterdir()) if f.is_file()}


# [SECTION] The link's parameters -----------------------------------------------------------

# docs/LINKS.md's table of link parameters (web/state/link_state.cpp); tests/test_figure.py checks
# this list against it. `v` is written here; the data's own are set by show() and show_model().
LINK_PARAMETERS = ("view", "head", "tiles", "tile_step", "qk", "token", "theme", "size", "lang", "panels", "fps", "lineheads", "threshold",
                   "map", "compare", "translate", "knockout", "knockout_mode", "hide", "importance", "attribution", "lens", "probs",
                   "target", "contrast", "corrupted", "patching", "generate", "temperature", "top_k", "seed", "step", "topk", "cmap", "values", "numbers",
                   "log", "sink", "rows")
DATA_PARAMETERS = ("preset", "scene", "model", "picture", "hf", "server", "key", "text", "chat", "source")


# The height the full app (panels=1) needs in an output: below it the panel beside the figure is
# cut short (a live model's next tokens), so a shorter output is figure-only whatever panels= says.
PANELS_HEIGHT = 640


def fit_panels(link, height):
    """link with panels off when `height` (pixels, or a CSS length in px) is below PANELS_HEIGHT."""
    pixels = height if isinstance(height, (int, float)) and not isinstance(height, bool) else None
    if isinstance(height, str) and height.endswith("px") and re.fullmatch(r"\d+(\.\d+)?px", height):
        pixels = float(height[:-2])
    if link.get("panels") in (True, 1, "1") and pixels is not None and pixels < PANELS_HEIGHT:
        link = dict(link, panels=False)
    return link


def link_hash(parameters, **data):
    """The link's hash (SPEC.md §4) from keyword arguments: True/False as 1/0, lists comma-joined."""
    for key in parameters:
        if key in DATA_PARAMETERS or key == "v":
            raise ValueError(f"{key}: set by the data the figure shows, not a keyword here")
        if key not in LINK_PARAMETERS:
            raise ValueError(f"{key}: not a link parameter (expected one of {', '.join(LINK_PARAMETERS)}, "
                             "width or height)")
    items = [("v", "1"), ("panels", "0"), ("theme", "auto")]
    items = [(k, v) for k, v in items if k not in parameters] + list(data.items()) + list(parameters.items())

    def text(value):
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, (list, tuple)):
            return ",".join(text(v) for v in value)
        return str(value)
    return "&".join(f"{k}={urllib.parse.quote(text(v), safe=':,.-_/@')}" for k, v in items if v is not None)


# [SECTION] The attention as .safetensors ---------------------------------------------------

def safetensors_bytes(stacks, name):
    """core/model/attention_file.hpp's layout: one F16 tensor per stack, the tokens in the metadata.
    F16 keeps 11 significant bits: a weight moves by at most 2.4e-4, under what a cell's two
    decimals or its colour (1/255) show."""
    metadata = {"model": name}
    for s in stacks:
        if s.name == "attention":
            metadata["tokens"] = json.dumps(s.queries, ensure_ascii=False)
        if s.name in ("encoder_attention", "cross_attention"):
            metadata["encoder_tokens"] = json.dumps(s.keys, ensure_ascii=False)
        if s.name in ("decoder_attention", "cross_attention"):
            metadata["decoder_tokens"] = json.dumps(s.queries, ensure_ascii=False)
    header, blobs, offset = {}, [], 0
    for s in stacks:
        blob = np.ascontiguousarray(s.maps, dtype="<f2").tobytes()
        header[s.name] = {"dtype": "F16", "shape": list(s.maps.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = metadata
    text = json.dumps(header, ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def byte_planes(data):
    """A .safetensors file of F16 tensors with its data as two planes, every weight's low byte then
    every high byte: the high bytes (sign, exponent and two bits of the mantissa of numbers in
    [0, 1]) compress to almost nothing. attnviz-notebook.js puts them back."""
    begin = 8 + struct.unpack("<Q", data[:8])[0]
    body = np.frombuffer(data, np.uint8, offset=begin).reshape(-1, 2)
    return data[:begin] + body[:, 0].tobytes() + body[:, 1].tobytes()


# [SECTION] The figure ----------------------------------------------------------------------

def _css_size(value, default):
    value = default if value is None else value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return f"{value:g}px"
    if isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?(px|%|em|rem|vh|vw)", value):
        return value
    raise ValueError(f"width/height: expected pixels (a positive number) or a CSS length such as '100%', got {value!r}")


class Figure:
    """An attnviz figure: shown by a notebook (_repr_html_), or written with save_html()."""

    def __init__(self, hash_, *, attention=None, name="attention", models=(), hub=None, cjk=False, picture=None, width=None,
                 height=None):
        self.hash = hash_
        self._attention = attention  # .safetensors bytes, or None (a live model)
        self._picture = picture  # a vision model's picture: (file name, its bytes), or None
        self._name = name
        self._models = tuple(models)
        self._hub = hub  # the Hub's address for a model by name (None: huggingface.co)
        # The words hold CJK characters: the CJK font goes inside. True: all of it (the text is
        # typed in the output); a string: only those characters' glyphs (the tokens are fixed).
        self._cjk = cjk
        self._width, self._height = _css_size(width, "100%"), _css_size(height, 480)

    def _repr_html_(self):
        return self.html()

    def html(self):
        """The output: a <div> for the figure, its data, and the script that draws it."""
        app, boot = _app()
        payload = {"app": app, "name": self._name + ".safetensors",
                   "attention": _packed(byte_planes(self._attention)) if self._attention is not None else None,
                   "models": {m: _model_files(m) for m in self._models}, "hub": self._hub,
                   "picture": {"name": self._picture[0], "bytes": base64.b64encode(self._picture[1]).decode("ascii")}
                   if self._picture else None,
                   "fonts": {"cjk-common.ttf": _cjk_font(None if self._cjk is True else "".join(sorted(set(self._cjk))))} if self._cjk else {}}
        element = "attnviz-" + uuid.uuid4().hex[:12]
        data = json.dumps(payload).replace("</", "<\\/")
        code = boot.replace("</script", "<\\/script") + f'\nattnvizNotebook("{element}");'
        note = ("attnviz: this figure draws with JavaScript. If it stays empty, trust the notebook "
                "(Jupyter: File → Trust Notebook) and run the cell again.")
        return (f'<div id="{element}" class="attnviz-output" data-attnviz-hash="{html.escape(self.hash)}" '
                f'style="width:{self._width};max-width:100%;height:{self._height};position:relative;'
                f'font:13px sans-serif;color:#888">{note}</div>\n'
                f'<script type="application/json" id="{element}-payload">{data}</script>\n'
                f'<script id="{element}-boot">\n{code}\n</script>\n')

    def to_html(self, title="attnviz"):
        """The figure as a whole HTML page."""
        return ('<!doctype html>\n<html><head><meta charset="utf-8">'
                '<meta name="viewport" content="width=device-width, initial-scale=1">'
                f'<title>{html.escape(title)}</title></head>\n<body style="margin:8px">\n{self.html()}</body></html>\n')
