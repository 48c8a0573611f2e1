"""Trains attnviz's vision model, models/tiny-vit: a ViT (ViTForImageClassification's layout) that
reads a digit drawn in one of Debian's fonts somewhere on a cluttered 32 × 32 picture, and whose
[CLS] heads look at the digit's strokes rather than at the clutter. Deterministic: fixed seeds,
pictures drawn by PIL (python3-pil) from the fonts of fonts-dejavu-core, fonts-dejavu-extra and
fonts-mathjax, one thread (scripts/train_models.sh runs it).

  /usr/bin/python3 training/tiny_vit.py OUT_FOLDER

Writes OUT_FOLDER/{config.json, preprocessor_config.json, model.safetensors (F32), training.json,
example-0.png … example-9.png}. docs/MODELS.md describes the result.

The pictures (`draw`): a background colour, one or two clutter strokes (thin lines and arcs in
other colours), then one digit 0–9 in a font, 14–23 px high, turned by up to ±12°, anywhere it
fits, in a colour far from the background's; then noise. The label is the digit; the ink mask (the
digit's own pixels) is what the head score reads.

The runs (2026-12-01, one thread each). The first: 60 000 pictures with two or three clutter
strokes as thick as a digit's (1–2 px), digits 13–22 px turned up to ±15°, 5000 steps of 128, lr
2e-3: training loss 0.36, held-out accuracy 79 % (training faces) and 80 % (held-out faces), the
[CLS] heads of layer 1 on the digit's patches 0.55 (of the whole row, its weight on itself in it)
against their share 0.18. Too hard for this
budget: the clutter became thin, the digits a little larger and less turned, the pictures 120 000
(each batch turned into pixel values as drawn), lr 3e-3 over 6000 steps.

The head score (`evaluate`'s ink scores): for each head, the share of the attention the [CLS] query
gives the patches (its weight on itself aside) that falls on patches the digit's ink covers (at least INK_PIXELS of its 16 pixels), over held-out pictures,
beside the share those patches are of all patches (what a head that looks anywhere would give).

[SECTION] The pictures
[SECTION] The model: ViT with Hugging Face's parameter names
[SECTION] Training
[SECTION] Evaluation: accuracy, the heads' ink scores
[SECTION] Writing the checkpoint
"""
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_files import stored, write_json, write_safetensors  # noqa: E402

SIZE, PATCH = 32, 4
CONFIG = {"hidden_size": 64, "num_hidden_layers": int(os.environ.get("NL", "4")), "num_attention_heads": 4, "intermediate_size": 128}
LABELS = [str(d) for d in range(10)]
STEPS = int(os.environ.get("STEPS", "6000"))
BATCH, LR = int(os.environ.get("BATCH", "128")), float(os.environ.get("LR", "3e-3"))
WARMUP, WEIGHT_DECAY = 300, 0.05
TRAIN_PICTURES = int(os.environ.get("TRAIN_PICTURES", "120000"))
HELDOUT_PICTURES = 2000
SEED, HELDOUT_SEED = 1234, 987654
INK_PIXELS = 3  # a patch is the digit's when at least this many of its 16 pixels are ink
ACCURACY_MIN = 0.95

# [SECTION] The pictures -------------------------------------------------------------------------

FONT_DIRS = ["/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/opentype/mathjax"]
# MathJax's faces that draw the ten digits as digits (its Caligraphic and Math faces draw old-style
# or italic numerals; Script, AMS, Size*, Vector, Win* have none: a .notdef box); DejaVu's math face has them too.
MATHJAX_DIGITS = ("Main-Regular", "Main-Bold", "Main-Italic", "SansSerif-Regular", "SansSerif-Bold",
                  "SansSerif-Italic", "Typewriter-Regular", "Fraktur-Regular", "Fraktur-Bold")
# Held out: these faces draw no training picture; the held-out accuracy is given on both.
HELDOUT_FONTS = ("DejaVuSerifCondensed-BoldItalic.ttf", "DejaVuSansMono-Oblique.ttf", "MathJax_SansSerif-Italic.otf")


def fonts():
    """(training faces, held-out faces): paths, sorted."""
    paths = []
    for d in FONT_DIRS:
        for name in sorted(os.listdir(d)):
            if name.startswith("DejaVu") or any(name == f"MathJax_{m}.otf" for m in MATHJAX_DIGITS):
                paths.append(os.path.join(d, name))
    train = [p for p in paths if os.path.basename(p) not in HELDOUT_FONTS]
    held = [p for p in paths if os.path.basename(p) in HELDOUT_FONTS]
    assert len(held) == len(HELDOUT_FONTS), "a held-out font is missing"
    return train, held


def colour_apart(rng, other, apart):
    """A colour whose luminance is at least `apart` (of 255) from `other`'s."""
    lum = lambda c: 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]  # noqa: E731
    while True:
        c = tuple(int(v) for v in rng.integers(0, 256, 3))
        if abs(lum(c) - lum(other)) >= apart:
            return c


def glyph_mask(font_path, digit, height, angle):
    """The digit's coverage (float 0…1), `height` px tall, turned by `angle` degrees, cropped."""
    font = ImageFont.truetype(font_path, 64)
    canvas = Image.new("L", (128, 128), 0)
    ImageDraw.Draw(canvas).text((32, 16), digit, font=font, fill=255)
    canvas = canvas.crop(canvas.getbbox())
    w = max(1, round(canvas.width * height / canvas.height))
    canvas = canvas.resize((w, height), Image.LANCZOS)
    canvas = canvas.rotate(angle, resample=Image.BILINEAR, expand=True)
    return canvas.crop(canvas.getbbox() or (0, 0, 1, 1))


def draw(rng, faces):
    """One picture: (RGB uint8 [SIZE, SIZE, 3], label, ink mask bool [SIZE, SIZE])."""
    label = int(rng.integers(10))
    face = faces[int(rng.integers(len(faces)))]
    bg = tuple(int(v) for v in rng.integers(0, 256, 3))
    picture = Image.new("RGB", (SIZE, SIZE), bg)
    pen = ImageDraw.Draw(picture)
    for _ in range(int(rng.integers(1, 3))):  # the clutter: thin strokes, never a digit
        colour, width = colour_apart(rng, bg, 60), 1
        x0, y0, x1, y1 = (int(v) for v in rng.integers(-4, SIZE + 4, 4))
        if rng.random() < 0.5:
            pen.line((x0, y0, x1, y1), fill=colour, width=width)
        else:
            box = (min(x0, x1), min(y0, y1), max(x0, x1) + 4, max(y0, y1) + 4)
            start = int(rng.integers(360))
            pen.arc(box, start, start + int(rng.integers(60, 200)), fill=colour, width=width)
    glyph = glyph_mask(face, LABELS[label], int(rng.integers(14, 24)), float(rng.uniform(-12, 12)))
    if glyph.width > SIZE - 2 or glyph.height > SIZE - 2:
        glyph = glyph.resize((min(glyph.width, SIZE - 2), min(glyph.height, SIZE - 2)), Image.LANCZOS)
    x, y = int(rng.integers(1, SIZE - glyph.width)), int(rng.integers(1, SIZE - glyph.height))
    coverage = np.zeros((SIZE, SIZE), np.float32)
    coverage[y:y + glyph.height, x:x + glyph.width] = np.asarray(glyph, np.float32) / 255
    fg = np.array(colour_apart(rng, bg, 110), np.float32)
    pixels = np.asarray(picture, np.float32) * (1 - coverage[..., None]) + fg * coverage[..., None]
    pixels += rng.normal(0, 6, pixels.shape)
    return np.clip(np.rint(pixels), 0, 255).astype(np.uint8), label, coverage >= 0.5


def pictures(seed, n, faces):
    """n pictures from `seed`: (uint8 [n, SIZE, SIZE, 3], labels int64 [n], ink bool [n, SIZE, SIZE])."""
    rng = np.random.default_rng(seed)
    drawn = [draw(rng, faces) for _ in range(n)]
    return (np.stack([d[0] for d in drawn]), np.array([d[1] for d in drawn], np.int64),
            np.stack([d[2] for d in drawn]))


def pixel_values(images):
    """uint8 [n, H, W, 3] -> float32 [n, 3, H, W] as ViTImageProcessor gives them (preprocessor_config.json):
    × 1/255, then (x − 0.5) / 0.5. The pictures are SIZE × SIZE, so its resize leaves them as they are."""
    x = torch.from_numpy(images).permute(0, 3, 1, 2).to(torch.float32) * np.float32(1 / 255)
    return (x - 0.5) / 0.5


def ink_patches(ink):
    """bool [n, SIZE, SIZE] -> bool [n, patches]: the patches (row order) with >= INK_PIXELS ink pixels."""
    g = SIZE // PATCH
    counts = ink.reshape(len(ink), g, PATCH, g, PATCH).sum(axis=(2, 4))
    return (counts >= INK_PIXELS).reshape(len(ink), g * g)

# [SECTION] The model: ViT with Hugging Face's parameter names -----------------------------------------


class Attention(torch.nn.Module):  # vit.encoder.layer.i.attention.{attention.{query,key,value}, output.dense}
    def __init__(self, d, H):
        super().__init__()
        self.H = H
        self.attention = torch.nn.ModuleDict({n: torch.nn.Linear(d, d) for n in ("query", "key", "value")})
        self.output = torch.nn.ModuleDict({"dense": torch.nn.Linear(d, d)})

    def forward(self, x):  # x [B, T, d] -> ([B, T, d], probs [B, H, T, T])
        B, T, d = x.shape
        split = lambda t: t.view(B, T, self.H, d // self.H).transpose(1, 2)  # noqa: E731
        q, k, v = (split(self.attention[n](x)) for n in ("query", "key", "value"))
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.H), dim=-1)
        out = (probs @ v).transpose(1, 2).reshape(B, T, d)
        return self.output["dense"](out), probs


class Layer(torch.nn.Module):  # ViTLayer: pre-norm attention, pre-norm GELU MLP
    def __init__(self, d, H, d_ff):
        super().__init__()
        self.attention = Attention(d, H)
        self.intermediate = torch.nn.ModuleDict({"dense": torch.nn.Linear(d, d_ff)})
        self.output = torch.nn.ModuleDict({"dense": torch.nn.Linear(d_ff, d)})
        self.layernorm_before = torch.nn.LayerNorm(d, eps=1e-12)
        self.layernorm_after = torch.nn.LayerNorm(d, eps=1e-12)

    def forward(self, x):
        a, probs = self.attention(self.layernorm_before(x))
        x = x + a
        return x + self.output["dense"](F.gelu(self.intermediate["dense"](self.layernorm_after(x)))), probs


class Model(torch.nn.Module):  # ViTForImageClassification: vit.{embeddings, encoder, layernorm}, classifier
    def __init__(self, c):
        super().__init__()
        d, n = c["hidden_size"], (SIZE // PATCH) ** 2
        emb = torch.nn.Module()
        emb.cls_token = torch.nn.Parameter(torch.randn(1, 1, d) * 0.02)
        emb.position_embeddings = torch.nn.Parameter(torch.randn(1, 1 + n, d) * 0.02)
        emb.patch_embeddings = torch.nn.Module()
        emb.patch_embeddings.projection = torch.nn.Conv2d(3, d, PATCH, PATCH)
        self.vit = torch.nn.Module()
        self.vit.embeddings = emb
        self.vit.encoder = torch.nn.Module()
        self.vit.encoder.layer = torch.nn.ModuleList(
            Layer(d, c["num_attention_heads"], c["intermediate_size"]) for _ in range(c["num_hidden_layers"]))
        self.vit.layernorm = torch.nn.LayerNorm(d, eps=1e-12)
        self.classifier = torch.nn.Linear(d, len(LABELS))

    def forward(self, x):  # pixel values [B, 3, SIZE, SIZE] -> (logits [B, 10], [probs [B, H, T, T]] per layer)
        e = self.vit.embeddings
        p = e.patch_embeddings.projection(x).flatten(2).transpose(1, 2)  # [B, patches, d], row order
        h = torch.cat([e.cls_token.expand(len(x), -1, -1), p], dim=1) + e.position_embeddings
        maps = []
        for layer in self.vit.encoder.layer:
            h, probs = layer(h)
            maps.append(probs)
        return self.classifier(self.vit.layernorm(h)[:, 0]), maps

# [SECTION] Training ------------------------------------------------------------------------------------


def lr_at(step):
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    return LR * 0.5 * (1 + math.cos(math.pi * (step - WARMUP) / max(1, STEPS - WARMUP)))


def train(model, x, y, log):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embeddings" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embeddings" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": rest, "weight_decay": 0.0}],
                            lr=LR, betas=(0.9, 0.98))
    order = torch.Generator().manual_seed(SEED)
    curve, t0, perm, at = [], time.time(), torch.randperm(len(x), generator=order), 0
    for step in range(STEPS):
        if at + BATCH > len(x):
            perm, at = torch.randperm(len(x), generator=order), 0
        idx = perm[at:at + BATCH]
        at += BATCH
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        logits, _ = model(pixel_values(x[idx.numpy()]))
        loss = F.cross_entropy(logits, y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(round(loss.item(), 4))
        if step % 250 == 0 or step == STEPS - 1:
            log(f"step {step}: loss {sum(curve[-50:]) / len(curve[-50:]):.4f} ({time.time() - t0:.0f} s)")
    return curve, time.time() - t0

# [SECTION] Evaluation: accuracy, the heads' ink scores ------------------------------------------------


@torch.no_grad()
def evaluate(model, images, labels, ink):
    """(accuracy, ink scores [layer][head], the ink patches' share of all patches)."""
    x = pixel_values(images)
    correct, cls_rows = 0, None
    for i in range(0, len(x), 500):
        logits, maps = model(x[i:i + 500])
        correct += int((logits.argmax(-1).numpy() == labels[i:i + 500]).sum())
        rows = torch.stack([m[:, :, 0, 1:] for m in maps], 1).numpy()  # [b, L, H, patches]: [CLS]'s row
        cls_rows = rows if cls_rows is None else np.concatenate([cls_rows, rows])
    on_ink = ink_patches(ink)  # [n, patches]
    cls_rows = cls_rows / cls_rows.sum(-1, keepdims=True)  # of what it gives the patches (its own weight aside)
    scores = (cls_rows * on_ink[:, None, None, :]).sum(-1).mean(0)  # [L, H]
    return correct / len(x), scores.tolist(), float(on_ink.mean())


# [SECTION] Writing the checkpoint -----------------------------------------------------------------


def hf_config():
    c = CONFIG
    return {"architectures": ["ViTForImageClassification"], "attention_probs_dropout_prob": 0.0, "encoder_stride": PATCH,
            "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "hidden_size": c["hidden_size"],
            "id2label": {str(i): n for i, n in enumerate(LABELS)}, "image_size": SIZE, "initializer_range": 0.02,
            "intermediate_size": c["intermediate_size"], "label2id": {n: i for i, n in enumerate(LABELS)},
            "layer_norm_eps": 1e-12, "model_type": "vit", "num_attention_heads": c["num_attention_heads"],
            "num_channels": 3, "num_hidden_layers": c["num_hidden_layers"], "patch_size": PATCH, "qkv_bias": True,
            "torch_dtype": "float32", "transformers_version": "4.46.0"}


def preprocessor_config():
    return {"image_processor_type": "ViTImageProcessor", "do_resize": True, "size": {"height": SIZE, "width": SIZE},
            "resample": 2, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
            "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}


def write_checkpoint(out, model):
    tensors = []
    for name, p in model.named_parameters():
        raw, _ = stored(p.detach().numpy(), "F32")
        tensors.append((name, "F32", tuple(p.shape), raw))
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    write_json(os.path.join(out, "config.json"), hf_config(), indent=2)
    write_json(os.path.join(out, "preprocessor_config.json"), preprocessor_config(), indent=2)


def write_examples(out, model, faces, head):
    """example-DIGIT.png: a picture of each digit in a held-out face, drawn from a seed of their
    own, the first of each that the model reads right and on whose digit the [CLS] of `head`
    (layer, head from 0: the best one on held-out faces) puts at least twice the digit's share of
    the picture (the built-in pictures show what the head does). Returns, for each, its file,
    label, ink patches (row order) and that head's share on them, as training.json records them."""
    rng, found = np.random.default_rng(HELDOUT_SEED + 1), {}
    for _ in range(10000):
        if len(found) == len(LABELS):
            break
        image, label, ink = draw(rng, faces)
        if label in found:
            continue
        with torch.no_grad():
            logits, maps = model(pixel_values(image[None]))
        on_ink = ink_patches(ink[None])[0]
        row = maps[head[0]][0, head[1], 0, 1:].numpy()
        share = float(row[on_ink].sum() / row.sum())
        if int(logits.argmax()) == label and share >= 2 * on_ink.mean():
            name = f"example-{LABELS[label]}.png"
            Image.fromarray(image).save(os.path.join(out, name), optimize=True)
            found[label] = {"file": name, "label": LABELS[label], "ink_patches": np.flatnonzero(on_ink).tolist(),
                            "head": f"{head[0] + 1}:{head[1] + 1}", "ink_share": share}
    assert len(found) == len(LABELS), f"in 10000 pictures only the digits {sorted(found)} were found"
    return [found[d] for d in range(len(LABELS))]


def main(out):
    torch.manual_seed(SEED)
    torch.set_num_threads(1)  # two threads took over twice as long a step here (a model this small)
    os.makedirs(out, exist_ok=True)

    def log(line):
        print(line, flush=True)

    train_faces, held_faces = fonts()
    t0 = time.time()
    images, labels, _ = pictures(SEED, TRAIN_PICTURES, train_faces)
    log(f"{len(images)} training pictures from {len(train_faces)} faces in {time.time() - t0:.0f} s")
    model = Model(CONFIG)
    curve, seconds = train(model, images, torch.from_numpy(labels), log)  # uint8: each batch made pixel values as it is drawn
    model.eval()
    write_checkpoint(out, model)
    held = {}
    for name, faces, seed in (("training faces", train_faces, HELDOUT_SEED), ("held-out faces", held_faces, HELDOUT_SEED + 2)):
        h_images, h_labels, h_ink = pictures(seed, HELDOUT_PICTURES, faces)
        acc, scores, share = evaluate(model, h_images, h_labels, h_ink)
        held[name] = {"seed": seed, "pictures": HELDOUT_PICTURES, "accuracy": acc, "ink_scores": scores, "ink_share": share}
        best = max((s, (l, h)) for l, row in enumerate(scores) for h, s in enumerate(row))
        log(f"{name}: accuracy {acc:.4f}; [CLS] on the digit's patches: best head {best[1][0] + 1}:{best[1][1] + 1} "
            f"{best[0]:.2f}, the patches' share {share:.2f}; " + " ".join(f"{s:.2f}" for row in scores for s in row))
    examples = write_examples(out, model, held_faces, best[1])  # the held-out faces' best head
    info = {"config": CONFIG, "size": SIZE, "patch": PATCH, "steps": STEPS, "batch": BATCH, "lr": LR, "warmup": WARMUP,
            "weight_decay": WEIGHT_DECAY, "seed": SEED, "train_pictures": TRAIN_PICTURES, "ink_pixels": INK_PIXELS,
            "faces": {"training": [os.path.basename(f) for f in train_faces], "held-out": [os.path.basename(f) for f in held_faces]},
            "training_seconds": round(seconds), "torch": torch.__version__, "heldout": held, "examples": examples,
            "loss_curve": curve}
    write_json(os.path.join(out, "training.json"), info, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
