"""The figure's HTML (attnviz._figure): the link's parameters against docs/LINKS.md's table, the
.safetensors bytes the app reads, and what show(), show_model() and save_html() write."""
import base64
import io
import json
import pathlib
import re
import struct
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import attnviz  # noqa: E402
from attnviz import _figure  # noqa: E402
from attnviz._fonts import thin_font  # noqa: E402


@pytest.fixture
def app(monkeypatch):
    """The app's files: the package's own when installed with them, else the web build's."""
    if not (_figure.APP / "attnviz.wasm").is_file():
        site = ROOT / "build-web" / "site"
        if not (site / "attnviz.wasm").is_file():
            pytest.skip("no web build")
        monkeypatch.setattr(_figure, "APP", site)
    _figure._app.cache_clear()
    yield
    _figure._app.cache_clear()


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def payload_of(html):
    """The output's data (attnviz-notebook.js reads the same element)."""
    return json.loads(html.split('-payload">', 1)[1].split("</script>", 1)[0])


def read_safetensors(data):
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    tensors = {}
    for name, t in header.items():
        if name != "__metadata__":
            b, e = t["data_offsets"]
            tensors[name] = np.frombuffer(data[8 + n + b:8 + n + e], "<f2").reshape(t["shape"])
    return header, tensors


def test_link_parameters_are_the_docs():
    page = (ROOT / "docs" / "LINKS.md").read_text()
    table = page.split("<!-- link-parameters", 1)[1].split("<!-- /link-parameters -->", 1)[0]
    names = set(re.findall(r"^\| `(\w+)` \|", table, re.M))
    assert set(_figure.LINK_PARAMETERS) | set(_figure.DATA_PARAMETERS) | {"v"} == names


def test_link_hash():
    assert _figure.link_hash({}) == "v=1&panels=0&theme=auto"
    h = _figure.link_hash({"view": "heatmap", "map": "attention:2:3", "theme": "light", "numbers": False,
                           "lineheads": [1, 3]})
    assert h == "v=1&panels=0&view=heatmap&map=attention:2:3&theme=light&numbers=0&lineheads=1,3"
    assert "text=caf%C3%A9%20%26%20co" in _figure.link_hash({}, model="tiny-lm", text="café & co")
    with pytest.raises(ValueError, match="^colour: not a link parameter"):
        _figure.link_hash({"colour": "red"})
    with pytest.raises(ValueError, match="^preset: set by the data"):
        _figure.link_hash({"preset": "i-am-good"})


def test_safetensors_bytes_hold_the_stacks_in_f16():
    rng = np.random.default_rng(1)
    enc, cross = softmax(rng.normal(size=(2, 3, 4, 4))), softmax(rng.normal(size=(2, 3, 5, 4)))
    stacks = attnviz.normalize(encoder_attentions=enc, cross_attentions=cross, tokens=list("abcd"),
                               target_tokens=["x", "y", "z", "ü", "</s>"])
    data = _figure.safetensors_bytes(stacks, "t5")
    header, tensors = read_safetensors(data)
    assert (8 + struct.unpack("<Q", data[:8])[0]) % 8 == 0
    assert header["__metadata__"]["model"] == "t5"
    assert json.loads(header["__metadata__"]["encoder_tokens"]) == list("abcd")
    assert json.loads(header["__metadata__"]["decoder_tokens"]) == ["x", "y", "z", "ü", "</s>"]
    assert list(tensors) == ["encoder_attention", "cross_attention"]
    assert np.abs(tensors["cross_attention"].astype(np.float32) - cross).max() <= 2.5e-4  # F16: half its spacing below 1
    # As the output carries it: the low bytes, then the high bytes, after the header.
    planed = _figure.byte_planes(data)
    begin = 8 + struct.unpack("<Q", data[:8])[0]
    assert planed[:begin] == data[:begin] and len(planed) == len(data)
    half = (len(data) - begin) // 2
    assert planed[begin:begin + half] == data[begin::2] and planed[begin + half:] == data[begin + 1::2]


def test_show_writes_one_self_contained_output(app):
    rng = np.random.default_rng(2)
    a = softmax(rng.normal(size=(2, 4, 6, 6)))
    fig = attnviz.show(a, ["<s>", "a", "</script>", "b", "c", "d"], view="heatmap", map="attention:2:3", width=500)
    html = fig._repr_html_()
    assert html.count("</script") == 2 and "<!--" not in html  # a token "</script>" stays in its data
    assert 'data-attnviz-hash="v=1&amp;panels=0&amp;theme=auto&amp;view=heatmap&amp;map=attention:2:3"' in html
    assert "width:500px" in html
    markup = re.sub(r"(<script[^>]*>).*?</script>", r"\1", html, flags=re.S)
    assert not re.search(r"\s(src|href)=", markup)  # nothing to fetch (tests/browser/notebook.mjs: no request made)
    payload = payload_of(html)
    assert payload["name"] == "attention.safetensors" and payload["models"] == {}
    # Two outputs: the same app (shared in one document), their own ids.
    other = attnviz.show(a, list("abcdef"))._repr_html_()
    ids = [re.search(r'<div id="([\w-]+)"', h).group(1) for h in (html, other)]
    assert ids[0] != ids[1]
    assert payload_of(other)["app"] == payload["app"]


def test_cjk_tokens_bring_the_cjk_font(app):
    a = softmax(np.zeros((1, 1, 3, 3)))
    assert payload_of(attnviz.show(a, list("abc")).html())["fonts"] == {}
    fonts = payload_of(attnviz.show(a, ["猫", "坐", "。"]).html())["fonts"]
    assert list(fonts) == ["cjk-common.ttf"] and len(fonts["cjk-common.ttf"]) < 20_000  # only its tokens' glyphs
    whole = payload_of(attnviz.show_model("tiny-lm", "天下大雨").html())["fonts"]  # typed there: all of it
    assert list(whole) == ["cjk-common.ttf"] and 500_000 < len(whole["cjk-common.ttf"]) < 800_000


def test_the_cjk_font_thinned_to_the_tokens(app):
    fontTools = pytest.importorskip("fontTools.ttLib")
    whole = (_figure.APP / _figure.CJK_FONT).read_bytes()
    thin = thin_font(whole, "猫坐垫龘a")  # 龘 is outside GB2312, a not in the font: both left out
    assert len(thin) < len(whole) // 4
    before, after = (fontTools.TTFont(io.BytesIO(f), checkChecksums=2) for f in (whole, thin))
    kept = {c: g for c, g in before.getBestCmap().items() if chr(c) in "猫坐垫"}
    assert after.getBestCmap() == kept and len(kept) == 3
    glyf = after["glyf"]
    assert any(glyf[g].isComposite() for g in kept.values())  # a composite's parts come along
    for g in kept.values():
        assert glyf[g].getCoordinates(glyf)[0] == before["glyf"][g].getCoordinates(before["glyf"])[0]
        assert after["hmtx"][g] == before["hmtx"][g]
    parts, todo = set(), list(kept.values())
    while todo:
        g = todo.pop()
        parts.add(g)
        todo += [c.glyphName for c in glyf[g].components] if glyf[g].isComposite() else []
    drawn = {g for g in after.getGlyphOrder() if glyf[g].numberOfContours != 0}
    assert drawn - {".notdef"} == parts  # .notdef is kept as it is
    assert sum(struct.unpack(f">{len(thin) // 4}I", thin)) & 0xFFFFFFFF == 0xB1B0AFBA  # head's checksum adjustment


def test_one_map_opens_the_heatmap(app):
    fig = attnviz.show(softmax(np.zeros((1, 3, 3))), list("abc"))
    assert "view=heatmap" in fig.hash


def test_show_model_on_a_picture(app, tmp_path):
    """A vision model by Hub id on a picture: the file goes inside the output, the Picture view opens."""
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 40  # the app decodes it; here only its signature matters
    (tmp_path / "cat.png").write_bytes(png)
    fig = attnviz.show_model("google/vit-base-patch16-224", image=tmp_path / "cat.png")
    payload = payload_of(fig.html())
    assert payload["picture"] == {"name": "cat.png", "bytes": base64.b64encode(png).decode("ascii")}
    assert "view=image" in fig.hash and "hf=google/vit-base-patch16-224" in fig.hash
    assert payload_of(attnviz.show_model("tiny-lm", "the cat").html())["picture"] is None
    assert payload_of(attnviz.show_model("google/vit-base-patch16-224", image=png, view="heatmap").html())["picture"]["name"] == "image"
    Image = pytest.importorskip("PIL.Image")
    pil = payload_of(attnviz.show_model("google/vit-base-patch16-224", image=Image.new("RGB", (3, 2), (10, 20, 30))).html())["picture"]
    assert pil["name"] == "image.png" and base64.b64decode(pil["bytes"]).startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="^image: cannot read '.*missing.jpg'"):
        attnviz.show_model("google/vit-base-patch16-224", image=str(tmp_path / "missing.jpg"))
    (tmp_path / "notes.txt").write_text("not a picture")
    with pytest.raises(ValueError, match="^image: notes.txt is not a PNG, JPEG, GIF or BMP file"):
        attnviz.show_model("google/vit-base-patch16-224", image=tmp_path / "notes.txt")
    with pytest.raises(ValueError, match="^text: give the text"):
        attnviz.show_model("tiny-lm")


def test_show_model(app, monkeypatch):
    fig = attnviz.show_model("tiny-circuits", "The cat sat", map="attention:2:2")
    payload = payload_of(fig.html())
    assert set(payload["models"]) == {"tiny-circuits"} and "config.json" in payload["models"]["tiny-circuits"]
    assert payload["attention"] is None
    assert "model=tiny-circuits&text=The%20cat%20sat" in fig.hash
    assert payload["hub"] is None
    monkeypatch.setenv("HF_ENDPOINT", "https://hf-mirror.com")  # huggingface_hub's mirror setting
    hub = attnviz.show_model("HuggingFaceTB/SmolLM2-135M", "Hi")
    assert "hf=HuggingFaceTB/SmolLM2-135M" in hub.hash
    payload = payload_of(hub.html())
    assert payload["models"] == {} and payload["hub"] == "https://hf-mirror.com"
    lens = attnviz.show_model("tiny-circuits", "Zq%k8wJ Zq%k8w", view="lens")
    assert "view=why" in lens.hash and "lens=1" in lens.hash
    patching = attnviz.show_model("tiny-lm", "the cat sat", view="patching", corrupted="the dog sat")
    assert "view=why" in patching.hash and "patching=1" in patching.hash and "corrupted=the%20dog%20sat" in patching.hash
    with pytest.raises(ValueError, match="^model: 'gpt7' is neither a built-in model"):
        attnviz.show_model("gpt7", "x")
    with pytest.raises(ValueError, match="^text: expected a string"):
        attnviz.show_model("tiny-lm", 3)


def test_a_short_output_is_figure_only(app):
    # The full app needs PANELS_HEIGHT: below it the panel beside the figure is cut short.
    assert "panels=0" in attnviz.show_model("tiny-circuits", "The cat sat", height=560, panels=True).hash
    assert "panels=0" in attnviz.show_model("tiny-circuits", "The cat sat", height="600px", panels=True).hash
    assert "panels=1" in attnviz.show_model("tiny-circuits", "The cat sat", height=720, panels=True).hash
    assert "panels=1" in attnviz.show_model("tiny-circuits", "The cat sat", height="80vh", panels=True).hash
    assert "panels=0" in attnviz.show(softmax(np.zeros((1, 2, 2, 2))), list("ab"), height=500, panels=1).hash


def test_bad_sizes_and_keywords():
    a = softmax(np.zeros((1, 1, 2, 2)))
    with pytest.raises(ValueError, match="^width/height"):
        attnviz.show(a, list("ab"), height="tall")
    with pytest.raises(ValueError, match="^hf: set by the data"):
        attnviz.show(a, list("ab"), hf="gpt2")


def test_save_html(app, tmp_path):
    fig = attnviz.show(softmax(np.zeros((1, 2, 3, 3))), list("abc"))
    attnviz.save_html(fig, tmp_path / "fig.html")
    page = (tmp_path / "fig.html").read_text()
    assert page.startswith("<!doctype html>") and "attnvizNotebook(" in page
    with pytest.raises(ValueError, match="^figure: expected what attnviz.show"):
        attnviz.save_html("<div>", tmp_path / "x.html")
