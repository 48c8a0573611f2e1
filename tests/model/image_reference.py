#!/usr/bin/env python3
"""The image processors' reference for tests/test_image.cpp, from Debian's python3-pil and NumPy:

    /usr/bin/python3 tests/model/image_reference.py OUTDIR

What transformers' (slow, PIL-based) image processors hand a vision model, written from their
sources (image_processing_vit.py, image_processing_clip.py, image_processing_siglip.py,
image_processing_bit.py, image_transforms.py): the picture converted to RGB, resized with PIL's
Image.resize and the processor's resampling filter (to {height, width}, or its shortest edge to a
size and the long one in proportion, truncated), center-cropped ((size - crop) // 2 from the top
and the left), then float32(float64(pixel) * rescale_factor) and (x - mean) / std in float32,
channels first.

Pictures: real photographs and drawings from Debian's emscripten package (its tests/), and
pictures written here at odd sizes and in every PNG mode (RGB, RGBA, gray, gray with alpha, a
palette). Processors: real preprocessor_config.json texts of ViT, CLIP, SigLIP and DINOv2
(google/vit-base-patch16-224, openai/clip-vit-base-patch32, google/siglip-base-patch16-224,
facebook/dinov2-small), and ViT's with every other filter PIL has (lanczos, box, hamming).

Idefics3 / SmolVLM (idefics3_process(), used by tests/model/make_vision_models.py; not in the
index below: a picture gives several views), written from image_processing_pil_idefics3.py
(Idefics3ImageProcessorPil; SmolVLMImageProcessorPil is the same code): the RGB picture resized
with PIL (the config's resample, LANCZOS by default) so that its longest edge is size.longest_edge
and the other side in proportion, truncated and then rounded up to even
(_resize_output_size_rescale_to_max_len, upscaling too; then at most 4096 a side); with
do_image_splitting, resized again to multiples of M = max_image_size.longest_edge
(resize_for_vision_encoder: the longer side rounded up to a multiple of M, the other from the
aspect ratio, truncated, then rounded up to one) and, when that is more than M × M, cut into M × M
tiles row by row (rows, cols) followed by the global view (that picture resized to M × M), or else
one view (rows = cols = 0); without splitting, one view: the first resize's output resized to
M × M. Every resize is PIL's of the uint8 picture the step before gave; then the rescale and the
normalization as above, per view. (do_pad pads the views to the largest one: one picture's views
are all M × M.)

Qwen2-VL / Qwen2.5-VL (qwen2_vl_process(), used by tests/model/make_vision_models.py; not in the
index below), written from image_processing_pil_qwen2_vl.py (Qwen2VLImageProcessorPil) and
image_processing_qwen2_vl.py's smart_resize: the RGB picture resized with PIL (resample, BICUBIC by
default) to the sides smart_resize gives for factor = patch_size · merge_size: each side rounded
(Python's round, half to even) to a multiple of the factor; when that is more than max_pixels, both
scaled by √(h·w / max_pixels) and floored to multiples (at least one factor), when less than
min_pixels scaled by √(min_pixels / (h·w)) and rounded up; an aspect ratio above 200 refused.
min_pixels and max_pixels: the config's top-level fields where it has them (the Hub's files), else
size's shortest_edge and longest_edge, else 56·56 and 28·28·1280. Then the rescale and OpenAI
CLIP's mean and std (the defaults) as above; one picture [3, H, W] (the processor's cutting into
patches is reference.py's qwen2_vl_flatten_patches).

Writes to OUTDIR: each picture (NAME.png written here, or the photograph's path), NAME.rgb (PIL's
decoded RGB bytes, height x width x 3), PROCESSOR.json (the config), NAME.PROCESSOR.f32 (the pixel
values, 3 x H x W float32, little-endian) and index.json:
  {"images": [{"name", "path", "width", "height"}], "processors": [{"name", "file"}],
   "cases": [{"image", "processor", "width", "height", "file"}]}
"""
import json
import math
import os
import sys

import numpy as np
from PIL import Image

PHOTOS = "/usr/share/emscripten/tests"  # Debian's emscripten: real pictures (JPEG and PNG)

PROCESSORS = {
    # google/vit-base-patch16-224: an old feature extractor's config, one number for the size
    "vit": {"do_normalize": True, "do_resize": True, "feature_extractor_type": "ViTFeatureExtractor",
            "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "resample": 2, "size": 224},
    # openai/clip-vit-base-patch32
    "clip": {"crop_size": 224, "do_center_crop": True, "do_normalize": True, "do_resize": True,
             "feature_extractor_type": "CLIPFeatureExtractor",
             "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
             "resample": 3, "size": 224},
    # google/siglip-base-patch16-224
    "siglip": {"do_normalize": True, "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
               "image_processor_type": "SiglipImageProcessor", "image_std": [0.5, 0.5, 0.5],
               "processor_class": "SiglipProcessor", "resample": 3, "rescale_factor": 0.00392156862745098,
               "size": {"height": 224, "width": 224}},
    # facebook/dinov2-small
    "dinov2": {"crop_size": {"height": 224, "width": 224}, "do_center_crop": True, "do_convert_rgb": True,
               "do_normalize": True, "do_rescale": True, "do_resize": True, "image_mean": [0.485, 0.456, 0.406],
               "image_processor_type": "BitImageProcessor", "image_std": [0.229, 0.224, 0.225], "resample": 3,
               "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": 256}},
}
for name, resample in (("lanczos", 1), ("box", 4), ("hamming", 5)):
    PROCESSORS["vit-" + name] = dict(PROCESSORS["vit"], resample=resample)
PROCESSORS["vit-small"] = dict(PROCESSORS["vit"], size={"height": 30, "width": 17})  # not square: the axes apart


def size_field(value, square):
    """-> (height, width) or ("shortest", n), as the processors read `size` and `crop_size`."""
    if isinstance(value, int):
        return (value, value) if square else ("shortest", value)
    if "shortest_edge" in value:
        return ("shortest", value["shortest_edge"])
    return (value["height"], value["width"])


def process(picture, config):
    kind = config.get("image_processor_type") or config["feature_extractor_type"]
    square = kind.startswith("ViT") or kind.startswith("Siglip")
    image = np.array(picture.convert("RGB"))  # H x W x 3, uint8
    if config.get("do_resize", True):
        h, w = image.shape[:2]
        size = size_field(config["size"], square)
        if size[0] == "shortest":  # get_resize_output_image_size(default_to_square=False)
            short, long = (w, h) if w <= h else (h, w)
            new_short, new_long = size[1], int(size[1] * long / short)
            size = (new_long, new_short) if w <= h else (new_short, new_long)
        image = np.array(Image.fromarray(image).resize((size[1], size[0]), resample=config.get("resample", 2)))
    if config.get("do_center_crop", False):  # image_transforms.center_crop, with its zero padding
        ch, cw = size_field(config["crop_size"], True)
        h, w = image.shape[:2]
        top, left = (h - ch) // 2, (w - cw) // 2
        nh, nw = max(ch, h), max(cw, w)
        padded = np.zeros((nh, nw, 3), dtype=image.dtype)
        tp, lp = -(-(nh - h) // 2), -(-(nw - w) // 2)
        padded[tp:tp + h, lp:lp + w] = image
        top, left = top + tp, left + lp
        image = padded[max(0, top):min(nh, top + ch), max(0, left):min(nw, left + cw)]
    x = image
    if config.get("do_rescale", True):
        x = (x.astype(np.float64) * config.get("rescale_factor", 1 / 255)).astype(np.float32)
    if config.get("do_normalize", True):
        x = x.astype(np.float32)
        mean = np.array(config["image_mean"], dtype=np.float32)
        std = np.array(config["image_std"], dtype=np.float32)
        x = (x - mean) / std
    return np.ascontiguousarray(x.astype(np.float32).transpose(2, 0, 1))


def rescale_normalize(image, config):
    """uint8 H x W x 3 -> float32 3 x H x W: float32(float64(pixel) * rescale_factor), then
    (x - mean) / std in float32, as process() does it."""
    x = image
    if config.get("do_rescale", True):
        x = (x.astype(np.float64) * config.get("rescale_factor", 1 / 255)).astype(np.float32)
    if config.get("do_normalize", True):
        x = x.astype(np.float32)
        x = (x - np.array(config["image_mean"], dtype=np.float32)) / np.array(config["image_std"], dtype=np.float32)
    return np.ascontiguousarray(x.astype(np.float32).transpose(2, 0, 1))


IDEFICS3_MAX_SIDE = 4096  # image_processing_pil_idefics3.MAX_IMAGE_SIZE


def idefics3_resize_size(height, width, longest):
    """get_resize_output_image_size: the longest edge to `longest`, the other in proportion,
    truncated and rounded up to even (at least 1); then scaled below 4096 a side. -> (h, w)"""
    aspect = width / height
    if width >= height:
        width, height = longest, int(longest / aspect)
        height += height % 2
    else:
        height, width = longest, int(longest * aspect)
        width += width % 2
    height, width = max(height, 1), max(width, 1)
    aspect = width / height  # _resize_output_size_scale_below_upper_bound
    if width >= height and width > IDEFICS3_MAX_SIDE:
        width, height = IDEFICS3_MAX_SIDE, int(IDEFICS3_MAX_SIDE / aspect)
    elif height > width and height > IDEFICS3_MAX_SIDE:
        height, width = IDEFICS3_MAX_SIDE, int(IDEFICS3_MAX_SIDE * aspect)
    return max(height, 1), max(width, 1)


def idefics3_encoder_size(height, width, m):
    """resize_for_vision_encoder: both sides to multiples of m (the longer one rounded up, the
    other from the aspect ratio, truncated, then rounded up). -> (h, w)"""
    aspect = width / height
    if width >= height:
        width = math.ceil(width / m) * m
        height = math.ceil(int(width / aspect) / m) * m
    else:
        height = math.ceil(height / m) * m
        width = math.ceil(int(height * aspect) / m) * m
    return height, width


def idefics3_process(picture, config):
    """Idefics3ImageProcessorPil / SmolVLMImageProcessorPil on one picture -> {"views": float32
    [n, 3, M, M] (the tiles row by row, then the global view; or the one view), "rows", "cols"
    (0, 0 when not split), "resized" (h, w) after the first resize, "encoder" (h, w) after
    resize_for_vision_encoder (None without splitting)}."""
    resample = config.get("resample", Image.LANCZOS)
    m = config["max_image_size"]["longest_edge"]
    image = np.array(picture.convert("RGB"))  # H x W x 3, uint8

    def resize(a, h, w):  # image_transforms.resize of a uint8 picture: PIL's, back to uint8
        return np.array(Image.fromarray(a).resize((w, h), resample=resample))

    if config.get("do_resize", True):
        image = resize(image, *idefics3_resize_size(image.shape[0], image.shape[1], config["size"]["longest_edge"]))
    resized, encoder, rows, cols = image.shape[:2], None, 0, 0
    if config.get("do_image_splitting", True):
        image = resize(image, *idefics3_encoder_size(image.shape[0], image.shape[1], m))
        encoder = image.shape[:2]
        h, w = encoder
        if h > m or w > m:  # split_images
            rows, cols = (h - m) // m + 1, (w - m) // m + 1
            views = [image[r * m:(r + 1) * m, c * m:(c + 1) * m] for r in range(rows) for c in range(cols)]
            views.append(resize(image, m, m))
        else:
            views = [image]
    else:
        views = [resize(image, m, m)]
    values = np.stack([rescale_normalize(v, config) for v in views])
    assert values.shape[2:] == (m, m), f"a view of {values.shape[2:]}, not {m} x {m}"
    return {"views": values, "rows": rows, "cols": cols, "resized": tuple(resized),
            "encoder": None if encoder is None else tuple(encoder)}


QWEN2_VL_DEFAULTS = {  # Qwen2VLImageProcessor's
    "do_resize": True, "resample": 3, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
    "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
    "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
    "size": {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 1280}}


def qwen2_vl_pixels(config):
    """-> (min_pixels, max_pixels): the top-level min_pixels / max_pixels where given (they override
    size's, as Qwen2VLImageProcessor.__init__ writes them into it), else size's shortest_edge and
    longest_edge (config filled with QWEN2_VL_DEFAULTS)."""
    size = config["size"]
    return (config.get("min_pixels") or size["shortest_edge"], config.get("max_pixels") or size["longest_edge"])


def smart_resize(height, width, factor, min_pixels, max_pixels):
    """image_processing_qwen2_vl.smart_resize -> (h, w): multiples of factor, h·w within
    [min_pixels, max_pixels] as nearly as the factor allows, the aspect ratio about kept."""
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"absolute aspect ratio must be smaller than 200, got {max(height, width) / min(height, width)}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def qwen2_vl_process(picture, config):
    """Qwen2VLImageProcessorPil on one picture, up to the patches -> float32 [3, H, W]: the RGB
    picture resized with PIL to smart_resize's sides (uint8 in, uint8 out), then rescale_normalize;
    the config's fields over QWEN2_VL_DEFAULTS (a null one is the default)."""
    config = dict(QWEN2_VL_DEFAULTS, **{k: v for k, v in config.items() if v is not None})
    image = np.array(picture.convert("RGB"))  # H x W x 3, uint8
    if config["do_resize"]:
        h, w = smart_resize(image.shape[0], image.shape[1], config["patch_size"] * config["merge_size"],
                            *qwen2_vl_pixels(config))
        image = np.array(Image.fromarray(image).resize((w, h), resample=config["resample"]))
    return rescale_normalize(image, config)


def pictures(out):
    """-> [(name, path, PIL image)]: the photographs, then the pictures written here."""
    found = []
    for f in ("screenshot.jpg", "screenshot.png", "gears.png", "cube_explosion.png"):
        path = os.path.join(PHOTOS, f)
        if os.path.exists(path):
            found.append((f.replace(".", "-"), path, Image.open(path)))
    rng = np.random.default_rng(7)
    made = {
        "noise-45x37": Image.fromarray(rng.integers(0, 256, (37, 45, 3), dtype=np.uint8), "RGB"),
        "gradient-300x17": Image.fromarray(np.stack([np.tile(np.arange(300, dtype=np.uint16) * 255 // 299, (17, 1))] * 3, -1).astype(np.uint8), "RGB"),
        "tall-9x250": Image.fromarray(rng.integers(0, 256, (250, 9, 3), dtype=np.uint8), "RGB"),
        "gray-64x48": Image.fromarray(rng.integers(0, 256, (48, 64), dtype=np.uint8), "L"),
        "gray-alpha-33x33": Image.fromarray(rng.integers(0, 256, (33, 33, 2), dtype=np.uint8), "LA"),
        "rgba-50x70": Image.fromarray(rng.integers(0, 256, (70, 50, 4), dtype=np.uint8), "RGBA"),
        "palette-40x30": Image.fromarray(rng.integers(0, 256, (30, 40, 3), dtype=np.uint8), "RGB").convert("P", palette=Image.ADAPTIVE, colors=16),
        "exact-224": Image.fromarray(rng.integers(0, 256, (224, 224, 3), dtype=np.uint8), "RGB"),
    }
    for name, im in made.items():
        path = os.path.join(out, name + ".png")
        im.save(path)
        found.append((name, path, Image.open(path)))
    return found


def main(out):
    os.makedirs(out, exist_ok=True)
    index = {"images": [], "processors": [], "cases": []}
    for name, config in PROCESSORS.items():
        file = name + ".json"
        with open(os.path.join(out, file), "w") as f:
            json.dump(config, f, indent=2)
        index["processors"].append({"name": name, "file": file})
    for name, path, picture in pictures(out):
        rgb = np.array(picture.convert("RGB"))
        rgb.tofile(os.path.join(out, name + ".rgb"))
        index["images"].append({"name": name, "path": path, "width": picture.width, "height": picture.height})
        for p, config in PROCESSORS.items():
            values = process(picture, config)
            file = f"{name}.{p}.f32"
            values.astype("<f4").tofile(os.path.join(out, file))
            index["cases"].append({"image": name, "processor": p, "height": values.shape[1], "width": values.shape[2], "file": file})
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    print(f"image reference: {len(index['images'])} pictures x {len(PROCESSORS)} processors -> {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: image_reference.py OUTDIR")
    main(sys.argv[1])
