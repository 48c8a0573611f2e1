"""attnviz in a notebook (SPEC.md §7): a model's attention as an interactive figure, drawn by
attnviz's own app inside the output: offline, with nothing fetched.

    import attnviz
    out = model(**inputs, output_attentions=True)     # transformers, attn_implementation="eager"
    attnviz.show(out.attentions, tokens)               # a tuple of [batch, heads, q, k] per layer
    attnviz.show(cache, tokens)                        # TransformerLens: cache["pattern", layer]
    attnviz.show(array, tokens, view="heatmap", map="attention:2:3", theme="light")
    attnviz.show(encoder_attentions=..., decoder_attentions=..., cross_attentions=...,
                 tokens=source, target_tokens=target)
    attnviz.show_model("tiny-circuits", "The cat sat")  # a model run in the output by attnviz's runtime
    attnviz.show_model("google/vit-base-patch16-224", image="cat.jpg")  # a vision model on a picture
    attnviz.save_html(figure, "fig.html")
    attnviz.live(model, tokenizer)                     # the app in the output, on a model PyTorch runs
    attnviz.serve(model, tokenizer)                    # the same, served: prints the page's URL

Keyword arguments are the link's parameters (docs/LINKS.md: view, head, map, theme, lang, cmap, …)
plus width and height (pixels, or a CSS length such as "100%").
"""
import os

from ._figure import CJK, LINK_PARAMETERS, Figure, builtin_models, fit_panels, link_hash, safetensors_bytes
from ._inputs import normalize

__all__ = ["show", "show_model", "save_html", "serve", "live", "builtin_models", "Figure", "LINK_PARAMETERS"]
__version__ = "0.1.0"


def show(attention=None, tokens=None, *, target_tokens=None, encoder_attentions=None, decoder_attentions=None,
         cross_attentions=None, batch_index=0, name="attention", width=None, height=None, **link):
    """The figure of a model's attention; a notebook shows it when it is the cell's value.

    attention: Hugging Face's `outputs.attentions` (a tuple of [batch, heads, q, k] per layer),
      a TransformerLens ActivationCache, an array [layers, heads, q, k] or [heads, q, k] (numpy
      or torch), or a model output with encoder, decoder and cross attentions.
    tokens: the tokens (the source's for an encoder-decoder model); target_tokens: the decoder's.
    batch_index: the sequence of the batch to show. name: the model's name, shown and used in
      exported files' names.
    Raises ValueError naming the argument and the shape it expected.
    """
    stacks = normalize(attention, tokens, target_tokens=target_tokens, encoder_attentions=encoder_attentions,
                       decoder_attentions=decoder_attentions, cross_attentions=cross_attentions,
                       batch_index=batch_index)
    if "view" not in link and "map" not in link and all(s.maps.shape[:2] == (1, 1) for s in stacks):
        link["view"] = "heatmap"  # one map: no layers × heads grid to choose from
    # The tokens are fixed: the CJK font's glyphs of their characters (and the name's) go inside, no more.
    words = "".join(t for s in stacks for t in s.queries + s.keys) + name
    cjk = words if CJK.search(words) else False
    return Figure(link_hash(fit_panels(link, height)), attention=safetensors_bytes(stacks, name), name=name, cjk=cjk, width=width, height=height)


WHY_GRIDS = ("lens", "attribution", "patching", "importance")


# What the app takes for a picture (core/model/image.hpp looks_like_picture): PNG, JPEG, GIF, BMP.
PICTURE_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF8", b"BM")


def _picture(image):
    """image= as the output carries it: (file name, bytes) of a path, raw bytes, or a PIL image (as PNG)."""
    if hasattr(image, "save") and hasattr(image, "size"):  # a PIL image: written as PNG, no loss
        import io
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return "image.png", buffer.getvalue()
    if isinstance(image, (bytes, bytearray)):
        name, data = "image", bytes(image)
    elif isinstance(image, (str, os.PathLike)):
        try:
            with open(image, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ValueError(f"image: cannot read {os.fspath(image)!r}: {e.strerror}") from None
        name = os.path.basename(os.fspath(image))
    else:
        raise ValueError(f"image: expected a file's path, its bytes or a PIL image, got {type(image).__name__}")
    if not data.startswith(PICTURE_SIGNATURES):
        raise ValueError(f"image: {name} is not a PNG, JPEG, GIF or BMP file")
    return name, data


def show_model(model, text=None, *, image=None, source=None, width=None, height=None, **link):
    """A model run live inside the output by attnviz's runtime, on `text` (a Marian model: `source`
    is translated, `text` read as the target when translate=0). The text box edits it there.
    A vision model (ViT, CLIP's or SigLIP's vision tower, DINOv2) runs on `image` instead (a
    file's path, its bytes or a PIL image): the Picture view lays a patch's attention over it.

    model: a built-in model (attnviz.builtin_models(): its files go inside the output) or a Hub
      id ORG/NAME[@REVISION], fetched by the output from the Hub ($HF_ENDPOINT, as huggingface_hub
      reads it, else huggingface.co) and kept in the browser.
    view: any view a link names, or one of the why grids, drawn large in the Why view and
      computed after each run: "lens", "attribution", "patching" (with corrupted= or compare=, a
      text of as many tokens) or "importance" (view=why with that experiment on).
    """
    if not isinstance(model, str) or not model:
        raise ValueError(f"model: expected a built-in model's name or a Hub id ORG/NAME, got {model!r}")
    picture = _picture(image) if image is not None else None
    if text is None and picture is None:
        raise ValueError("text: give the text the model reads (or, for a vision model, image=)")
    text = "" if text is None else text
    if not isinstance(text, str):
        raise ValueError(f"text: expected a string, got {type(text).__name__}")
    builtin = model in builtin_models()
    if not builtin and "/" not in model:
        raise ValueError(f"model: {model!r} is neither a built-in model ({', '.join(builtin_models())}) nor a Hub id ORG/NAME")
    data = {"model": model} if builtin else {"hf": model}
    data.update(text=text or None, source=source)  # a picture's model reads no text: none in the link
    link.setdefault("view", "image" if picture else "heatmap")
    if link["view"] in WHY_GRIDS:  # the Why view, that grid's experiment on
        link[link["view"]] = True
        link["view"] = "why"
    return Figure(link_hash(fit_panels(link, height), **data), name=model.replace("/", "-"), models=[model] if builtin else [],
                  hub=None if builtin else os.environ.get("HF_ENDPOINT"), cjk=bool(CJK.search(text + (source or ""))),
                  picture=picture, width=width, height=height)


def save_html(figure, path):
    """Writes the figure as one HTML file that opens offline in any browser."""
    if not isinstance(figure, Figure):
        raise ValueError(f"figure: expected what attnviz.show() returns, got {type(figure).__name__}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(figure.to_html())


def serve(model, tokenizer, **kwargs):
    """The page as the front end of `model`, run by PyTorch where it is (docs/NOTEBOOK.md, "A big
    model on your GPUs"): registers attnviz's attention function (attn_implementation "attnviz"),
    serves the app and the model's maps at http://127.0.0.1:PORT and prints the page's URL.
    Keywords: host, port, origins (other pages that may ask), name, max_tokens, quiet."""
    from ._serve import serve as start  # torch only when asked for
    return start(model, tokenizer, **kwargs)


def live(model, tokenizer, **kwargs):
    """serve(), shown as the whole app in the notebook's output (height= in pixels)."""
    from ._serve import live as start
    return start(model, tokenizer, **kwargs)
