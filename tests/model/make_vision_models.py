#!/usr/bin/python3
"""Writes tiny random-weight vision checkpoints in the Hugging Face layout — ViT, CLIP's and
SigLIP's vision towers, DINOv2 (with registers too), and vision-language models (Idefics3 /
SmolVLM, Gemma 3, Qwen2.5-VL) — each with a picture and the float64
reference run of tests/model/reference.py (vit_forward, clip_vision_forward,
siglip_vision_forward, dinov2_forward) on it, for the
C++ runtime's vision tests (tests/model/test_vision.py).

usage: /usr/bin/python3 tests/model/make_vision_models.py OUTDIR

OUTDIR/cases.json lists the cases (written last); OUTDIR/CASE/ holds
  config.json                as save_pretrained writes the case's config class (the class's own
                             fields, the architectures, torch_dtype): ViTConfig (id2label/label2id
                             when there is a classifier), CLIPVisionConfig, CLIPConfig (its
                             text_config and vision_config nested), SiglipVisionConfig
  model.safetensors          every tensor of the model's state_dict:
                               vit       ViTForImageClassification ("vit." + …, classifier.*) or
                                         ViTModel (no prefix, and pooler.dense.*, which attnviz ignores)
                               clip      CLIPVisionModel ("vision_model." + …) or CLIPModel (also
                                         "text_model." + …, visual_projection, text_projection,
                                         logit_scale, and the position_ids buffers older versions
                                         saved: attnviz reads the vision tower only)
                               siglip    SiglipVisionModel ("vision_model." + …; with
                                         vision_use_head, the pooling head's "vision_model.head.*",
                                         which attnviz ignores)
  (DINOv2: Dinov2Config / Dinov2WithRegistersConfig; Dinov2Model or Dinov2ForImageClassification
  ("dinov2." / "dinov2_with_registers." + …, classifier.* on 2·d); BitImageProcessor's, with or
  without the crop: the picture's grid is not the position table's)
  preprocessor_config.json   ViTImageProcessor's (resize to {height, width}); CLIPImageProcessor's
                             (shortest edge, then the center crop; or, as openai's CLIP ships, an
                             old CLIPFeatureExtractor's with one number for each); SiglipImageProcessor's
  image.png                  the picture (PIL, RGB, its own size: the processor resizes it)
  expected.json              {"case", "model_type" (config.json's), "dtype", "image": "image.png",
                             "pixel_values" [3][H][W] (tests/model/image_reference.py's process()
                             of image.png with that preprocessor config: float32 values),
                             "tokens" (ViT, CLIP, DINOv2: ["[CLS]", "p0,0", "p0,1", … "p{row},{col}"],
                             patches in row order, DINOv2's registers "reg0" … after the [CLS];
                             SigLIP: no [CLS], "p0,0" first),
                             "patches" {"rows": H/p, "cols": W/p, "size": p, "first": 1 (0: SigLIP)},
                             "attention" [L][H][T][T], "hidden" [T][d] (the last_hidden_state:
                             ViT after its final layernorm, CLIP with none — post_layernorm is the
                             pooled [CLS]'s only —, SigLIP after post_layernorm),
                             "logits" [num_labels] (ViT's classifier on the [CLS] row; only
                             ViTForImageClassification), "q": {"attention": [L][H][T][d_head]},
                             "x": {"attention": [L][T][d]}}
And three vision-language cases (Idefics3ForConditionalGeneration, SmolVLMForConditionalGeneration:
"idefics3" split into 2 x 3 tiles, "smolvlm" not split, "idefics3-middle" with <image> inside the
text), with reference.idefics3_forward on the views of image_reference.idefics3_process():
  config.json                Idefics3Config's / SmolVLMConfig's (vision_config, a Llama text_config,
                             image_token_id, scale_factor, tie_word_embeddings, vocab_size)
  model.safetensors          "model.vision_model." + the tower's, "model.connector.modality_projection.
                             proj.weight", "model.text_model." + LlamaModel's, "lm_head.weight" (not
                             when tied)
  preprocessor_config.json   Idefics3ImageProcessor's / SmolVLMImageProcessor's as the Hub's SmolVLM
                             files have it (size and max_image_size longest_edge, do_image_splitting,
                             resample 1 = LANCZOS, mean and std 0.5); processor_config.json: image_seq_len
  tokenizer.json             make_models' byte-level BPE (Llama-like cases') with <|im_start|> (the
                             BOS its TemplateProcessing adds), <fake_token_around_image>, <image>,
                             <end_of_utterance>, <global-img>, <row_R_col_C> (R, C 1..6) added after it
  expected.json              {"case", "model_type", "dtype", "image", "text", "prompt" (the text with
                             its <image> expanded as processing_idefics3.py does; the picture first
                             when the text has none), "ids" (the prompt encoded as the tokenizers
                             library does with add_special_tokens), "tokens", "image_tokens" (the
                             <image> positions from 0), "tiles" {"rows", "cols"} (0, 0: not split),
                             "patches" {"rows", "cols", "size", "first": 0} (one view's grid),
                             "sizes" (the picture's, after the first resize, after the resize to
                             tile multiples), "pixel_values" [view][3][S][S] (tiles row by row, then
                             the global view), "attention" [L][H][T][T] (the text model's), "hidden"
                             [T][d_text] (after the final norm), "logits" [V] (the last position),
                             "vision_attention" [view][L][H][P][P], "vision_hidden" [view][P][d]
                             (after post_layernorm), "image_features" [view][image_seq_len][d_text]
                             (the connector's rows)}
And two Gemma 3 cases with images (Gemma3ForConditionalGeneration: "gemma3" in transformers 5's
layout and config, float32, a 70 x 45 picture before the text; "gemma3-legacy" in the layout and
config.json the Hub's google/gemma-3-*-it files have, bfloat16, a 40 x 40 picture at the text's
<start_of_image>), with reference.gemma3_forward on image_reference.process()'s one view:
  config.json                Gemma3Config's: text_config (gemma3_text: rope_parameters per layer
                             type, layer_types; or the Hub's 4.50 form: rope_scaling,
                             sliding_window_pattern, the defaults left out), vision_config
                             (siglip_vision_model), mm_tokens_per_image, boi_token_index,
                             eoi_token_index, image_token_index (the tokenizer's ids of
                             <start_of_image>, <end_of_image>, <image_soft_token>), tied
  model.safetensors          "model.language_model." + Gemma3TextModel's, "model.vision_tower.
                             vision_model." + SigLIP's, "model.multi_modal_projector.
                             {mm_input_projection_weight [d_vision, d_text], mm_soft_emb_norm.weight}";
                             legacy: "language_model.model.", "vision_tower.vision_model.",
                             "multi_modal_projector."; no lm_head (tied)
  preprocessor_config.json   Gemma3ImageProcessor's as the Hub's gemma-3 files have it (resize to
                             {height, width}, bilinear, mean and std 0.5, pan and scan off);
                             processor_config.json: image_seq_length
  tokenizer.json             the same byte-level BPE with <pad>, <eos>, <bos> (the BOS its
                             TemplateProcessing adds), <start_of_image>, <end_of_image>,
                             <image_soft_token> added after it
  expected.json              as the Idefics3 cases' ("prompt": the text's <start_of_image> replaced by
                             "\n\n<start_of_image>" + <image_soft_token> x mm_tokens_per_image +
                             "<end_of_image>\n\n" as processing_gemma3.py does, the picture first
                             when the text has no <start_of_image>: attnviz's rule; "image_tokens"
                             the <image_soft_token> positions; "tiles" 0, 0; one view)
And two Qwen2.5-VL cases (Qwen2_5_VLForConditionalGeneration: "qwen2_5_vl" in transformers 5's layout
and config, float32, its own lm_head, a 45 x 37 picture smart-resized to 48 x 40 before the text;
"qwen2_5_vl-legacy" in the layout and config.json the Hub's Qwen/Qwen2.5-VL-3B-Instruct files have,
bfloat16, tied, 70 x 52 over max_pixels to 48 x 32, at the text's <|image_pad|>), with
reference.qwen2_5_vl_forward on image_reference.qwen2_vl_process()'s picture:
  config.json                Qwen2_5_VLConfig's: text_config (qwen2_5_vl_text: rope_parameters with
                             mrope_section), vision_config (depth, num_heads, window_size,
                             fullatt_block_indexes, out_hidden_size, …); or the Hub's 4.49 form, the
                             text model's fields at the top with rope_scaling {"type": "mrope"};
                             image_token_id, video_token_id, vision_start_token_id, vision_end_token_id
                             (the tokenizer's ids of <|image_pad|>, <|video_pad|>, <|vision_start|>,
                             <|vision_end|>)
  model.safetensors          "model.visual." + the tower's (patch_embed.proj.weight, a Conv3d over 2
                             frames; blocks.{i}.norm1, norm2, attn.qkv, attn.proj, mlp.gate_proj,
                             up_proj, down_proj; merger.ln_q, merger.mlp.0, merger.mlp.2),
                             "model.language_model." + Qwen2's (q/k/v biases), "lm_head.weight" (not
                             when tied); legacy: "visual.", "model."
  preprocessor_config.json   Qwen2VLImageProcessor's: save_pretrained's (min_pixels, max_pixels and
                             size's edges, resample 3, the do_ flags), or the Hub's short one (no
                             resample: bicubic); patch_size, temporal_patch_size, merge_size the tower's
  tokenizer.json             the same byte-level BPE with Qwen2's added tokens (<|endoftext|> its own
                             last token, <|im_start|>, <|im_end|>, …, <|vision_start|>, <|vision_end|>,
                             <|vision_pad|>, <|image_pad|>, <|video_pad|> after it) and the ByteLevel
                             post-processor (no BOS)
  expected.json              as the Gemma 3 cases' ("prompt": the text's <|image_pad|> repeated to the
                             picture's merged tokens as processing_qwen2_5_vl.py does, the picture first
                             as <|vision_start|><|image_pad|><|vision_end|> when the text has none:
                             attnviz's rule; "image_tokens" the <|image_pad|> positions; "patches" the
                             resized picture's grid; "sizes" resized (h, w); the tower's maps and
                             hidden state in the picture's row order), and "positions" [3][T] (time,
                             height, width: get_rope_index's)
Fixed seeds, one thread: the same bytes every run.
"""
import math
import os
import re
import sys

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402
from image_reference import idefics3_process, process, qwen2_vl_process  # noqa: E402
from make_models import (RandomWeights, case_folder, expected_json, gpt2_encode, gpt2_tokenizer,  # noqa: E402
                         llama_config, llama_weights, write_json)
from hf_files import TORCH_DTYPES  # noqa: E402  (training/, on the path make_models set)

torch.set_num_threads(1)

LABELS = ["tabby cat", "golden retriever", "espresso", "lighthouse", "sunflower"]

CASES = [
    dict(case="vit", family="vit", head=True, d=32, L=2, H=4, d_ff=64, image_size=32, patch_size=8, picture=(45, 37),
         resample=2, dtype="F32", seed=61, name_or_path="attnviz/tiny-vit"),
    dict(case="vit-model", family="vit", head=False, d=24, L=3, H=2, d_ff=40, image_size=48, patch_size=16,
         picture=(61, 29), resample=3, dtype="F32", seed=62),
    # CLIPVisionModel: a picture wider than tall (its shortest edge resized to 32, then the crop)
    dict(case="clip-vision", family="clip", whole=False, d=32, L=2, H=4, d_ff=64, image_size=32, patch_size=8,
         picture=(50, 41), resample=3, dtype="F32", seed=63, projection_dim=16,
         name_or_path="attnviz/tiny-clip-vision"),
    # CLIPModel: taller than wide, in float16, openai's old CLIPFeatureExtractor config (one number
    # for size and crop_size); the text tower, both projections, logit_scale and the position_ids
    # buffers (int64) in the file too
    dict(case="clip", family="clip", whole=True, d=24, L=3, H=2, d_ff=48, image_size=48, patch_size=16,
         picture=(37, 70), resample=3, dtype="F16", seed=64, projection_dim=12, old_processor=True,
         position_ids=True, text=dict(d=16, L=1, H=2, d_ff=32, V=64, P=16)),
    dict(case="siglip-vision", family="siglip", head=False, d=32, L=2, H=2, d_ff=48, image_size=32, patch_size=8,
         picture=(45, 37), resample=3, dtype="F32", seed=65),
    # vision_use_head: the attention-pooling head's tensors in the file (attnviz ignores them);
    # bfloat16, upsampled, 12-pixel patches
    dict(case="siglip-vision-head", family="siglip", head=True, d=24, L=3, H=4, d_ff=40, image_size=48,
         patch_size=12, picture=(29, 53), resample=3, dtype="BF16", seed=66, name_or_path="attnviz/tiny-siglip"),
    # DINOv2 as the Hub ships it: a position table bigger than the processor's crop (here 7 × 7
    # patches resized to 5 × 5: bicubic, as the model's interpolate_pos_encoding), a classifier on
    # [CLS] ‖ the patches' mean
    dict(case="dinov2", family="dinov2", head=True, d=32, L=2, H=4, mlp_ratio=2, image_size=56, patch_size=8,
         picture=(61, 45), resample=3, shortest_edge=48, crop=40, dtype="F32", seed=67, name_or_path="attnviz/tiny-dinov2"),
    # Dinov2Model with the SwiGLU MLP (dinov2-giant's), in bfloat16, no crop: a picture wider
    # than tall gives 6 × 9 patches from a 4 × 4 table (upsampled)
    dict(case="dinov2-swiglu", family="dinov2", head=False, swiglu=True, d=24, L=2, H=2, mlp_ratio=4, image_size=32,
         patch_size=8, picture=(61, 40), resample=3, shortest_edge=48, crop=None, dtype="BF16", seed=68),
    # with registers (Darcet et al. 2024): 4 tokens after the [CLS]; positions resized with
    # antialias (6 × 6 to 4 × 4), the classifier's mean over the patches alone
    dict(case="dinov2-registers", family="dinov2", registers=4, head=True, d=32, L=2, H=4, mlp_ratio=2, image_size=48,
         patch_size=8, picture=(45, 61), resample=3, shortest_edge=40, crop=32, dtype="F32", seed=69),
    # Dinov2WithRegistersModel, 2 registers, float16, upsampled with antialias to 5 × 7
    dict(case="dinov2-registers-model", family="dinov2", registers=2, head=False, d=24, L=3, H=2, mlp_ratio=3,
         image_size=32, patch_size=8, picture=(53, 37), resample=2, shortest_edge=40, crop=None, dtype="F16", seed=70),
]

CLIP_MEAN, CLIP_STD = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
RESCALE = 0.00392156862745098
TRANSFORMERS_VERSION = "4.46.3"


def torch_dtype(case):
    return str(TORCH_DTYPES[case["dtype"]])[6:]

# [SECTION] ViT --------------------------------------------------------------------------------------


def vit_config(case):
    """config.json as save_pretrained writes a ViTConfig: ViTConfig's fields (its defaults where the
    case does not set them), architectures, torch_dtype, transformers_version; the labels only for
    the classifier (ViTModel keeps PretrainedConfig's default two, which save_pretrained omits)."""
    cfg = {"_name_or_path": case.get("name_or_path"),
           "architectures": ["ViTForImageClassification" if case["head"] else "ViTModel"],
           "attention_probs_dropout_prob": 0.0, "encoder_stride": 16, "hidden_act": "gelu",
           "hidden_dropout_prob": 0.0, "hidden_size": case["d"], "image_size": case["image_size"],
           "initializer_range": 0.02, "intermediate_size": case["d_ff"], "layer_norm_eps": 1e-12,
           "model_type": "vit", "num_attention_heads": case["H"], "num_channels": 3,
           "num_hidden_layers": case["L"], "patch_size": case["patch_size"], "qkv_bias": True,
           "torch_dtype": torch_dtype(case), "transformers_version": TRANSFORMERS_VERSION}
    if case["head"]:
        cfg["id2label"] = {str(i): name for i, name in enumerate(LABELS)}
        cfg["label2id"] = {name: i for i, name in enumerate(LABELS)}
    return cfg


def vit_preprocessor(case):
    return {"image_processor_type": "ViTImageProcessor", "do_resize": True,
            "size": {"height": case["image_size"], "width": case["image_size"]}, "resample": case["resample"],
            "do_rescale": True, "rescale_factor": RESCALE, "do_normalize": True,
            "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}


def vit_weights(case, cfg):
    """The tensors in ViTForImageClassification's / ViTModel's state_dict order; the scales of
    make_models' other families (nn.Linear 1.2/√in, LayerNorm 1 ± 0.1), so that the softmax rows
    are neither uniform nor one-hot."""
    d, d_ff, p, C = cfg["hidden_size"], cfg["intermediate_size"], cfg["patch_size"], cfg["num_channels"]
    n = (cfg["image_size"] // p) ** 2
    w = RandomWeights(case["seed"], case["dtype"], "vit." if case["head"] else "")
    e = "embeddings."
    w.normal(e + "cls_token", (1, 1, d), 0.5)
    w.normal(e + "position_embeddings", (1, 1 + n, d), 0.3)
    w.normal(e + "patch_embeddings.projection.weight", (d, C, p, p), 1.2 / math.sqrt(C * p * p))
    w.normal(e + "patch_embeddings.projection.bias", (d,), 0.1)
    for i in range(cfg["num_hidden_layers"]):
        lp = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            w.linear(lp + "attention.attention." + name, d, d)
        w.linear(lp + "attention.output.dense", d, d)
        w.linear(lp + "intermediate.dense", d, d_ff)
        w.linear(lp + "output.dense", d_ff, d)
        w.layer_norm(lp + "layernorm_before", d)
        w.layer_norm(lp + "layernorm_after", d)
    w.layer_norm("layernorm", d)
    if case["head"]:  # ViTForImageClassification: the classifier, never under the prefix
        for name, shape, std in (("classifier.weight", (len(LABELS), d), 1.2 / math.sqrt(d)),
                                 ("classifier.bias", (len(LABELS),), 0.1)):
            w.add(name, std * w.rng.standard_normal(shape), file_name=name)
    else:  # ViTModel's pooler (dense + tanh on [CLS]): in the file, not in attnviz's run
        w.linear("pooler.dense", d, d)
    return w


def vit_case(case):
    cfg = vit_config(case)
    return cfg, cfg, vit_weights(case, cfg), vit_preprocessor(case)

# [SECTION] CLIP: CLIPVisionModel, CLIPModel ----------------------------------------------------------


def clip_vision_fields(case):
    """CLIPVisionConfig's own fields (what save_pretrained writes of it, nested or not)."""
    return {"attention_dropout": 0.0, "hidden_act": "quick_gelu", "hidden_size": case["d"],
            "image_size": case["image_size"], "initializer_factor": 1.0, "initializer_range": 0.02,
            "intermediate_size": case["d_ff"], "layer_norm_eps": 1e-05, "model_type": "clip_vision_model",
            "num_attention_heads": case["H"], "num_channels": 3, "num_hidden_layers": case["L"],
            "patch_size": case["patch_size"], "projection_dim": case["projection_dim"]}


def clip_config(case):
    """-> (config.json, the vision tower's fields): CLIPVisionConfig's, or CLIPConfig's with the
    tower's as "vision_config" and a tiny CLIPTextConfig as "text_config"."""
    vision = clip_vision_fields(case)
    if not case["whole"]:
        cfg = dict(vision, _name_or_path=case.get("name_or_path"), architectures=["CLIPVisionModel"],
                   torch_dtype=torch_dtype(case), transformers_version=TRANSFORMERS_VERSION)
        return cfg, vision
    t = case["text"]
    text = {"attention_dropout": 0.0, "bos_token_id": t["V"] - 2, "eos_token_id": t["V"] - 1,
            "hidden_act": "quick_gelu", "hidden_size": t["d"], "initializer_factor": 1.0, "initializer_range": 0.02,
            "intermediate_size": t["d_ff"], "layer_norm_eps": 1e-05, "max_position_embeddings": t["P"],
            "model_type": "clip_text_model", "num_attention_heads": t["H"], "num_hidden_layers": t["L"],
            "pad_token_id": 1, "projection_dim": case["projection_dim"], "vocab_size": t["V"]}
    cfg = {"_name_or_path": case.get("name_or_path"), "architectures": ["CLIPModel"], "initializer_factor": 1.0,
           "logit_scale_init_value": 2.6592, "model_type": "clip", "projection_dim": case["projection_dim"],
           "text_config": text, "torch_dtype": torch_dtype(case), "transformers_version": TRANSFORMERS_VERSION,
           "vision_config": vision}
    return cfg, vision


def clip_preprocessor(case):
    n = case["image_size"]
    if case.get("old_processor"):  # openai/clip-vit-base-patch32's: a feature extractor's, one number each
        return {"crop_size": n, "do_center_crop": True, "do_normalize": True, "do_resize": True,
                "feature_extractor_type": "CLIPFeatureExtractor", "image_mean": CLIP_MEAN, "image_std": CLIP_STD,
                "resample": case["resample"], "size": n}
    return {"crop_size": {"height": n, "width": n}, "do_center_crop": True, "do_convert_rgb": True,
            "do_normalize": True, "do_rescale": True, "do_resize": True, "image_mean": CLIP_MEAN,
            "image_processor_type": "CLIPImageProcessor", "image_std": CLIP_STD, "resample": case["resample"],
            "rescale_factor": RESCALE, "size": {"shortest_edge": n}}


def tower_layers(w, d, d_ff, L):
    """CLIPEncoder's / SiglipEncoder's layers in state_dict order (CLIPAttention declares k, v, q,
    out); make_models' scales (nn.Linear 1.2/√in, LayerNorm 1 ± 0.1)."""
    for i in range(L):
        lp = f"encoder.layers.{i}."
        for name in ("k", "v", "q", "out"):
            w.linear(lp + f"self_attn.{name}_proj", d, d)
        w.layer_norm(lp + "layer_norm1", d)
        w.linear(lp + "mlp.fc1", d, d_ff)
        w.linear(lp + "mlp.fc2", d_ff, d)
        w.layer_norm(lp + "layer_norm2", d)


def position_ids(w, name, n):  # the int64 buffer [1, n] transformers saved before 4.31
    w.raw(name, "I64", (1, n), np.arange(n, dtype="<i8").tobytes())


def clip_weights(case, vision):
    """CLIPVisionModel's / CLIPModel's tensors in state_dict order; W gets the vision tower's
    without "vision_model." (the text tower's and the projections' go to the file only)."""
    d, p, C = vision["hidden_size"], vision["patch_size"], vision["num_channels"]
    n = (vision["image_size"] // p) ** 2
    w = RandomWeights(case["seed"], case["dtype"], "vision_model.")
    if case["whole"]:  # CLIPModel declares text_model first; its values kept apart from W
        t = case["text"]
        w.prefix, w.W = "text_model.", {}
        w.normal("embeddings.token_embedding.weight", (t["V"], t["d"]), 0.5)
        w.normal("embeddings.position_embedding.weight", (t["P"], t["d"]), 0.2)
        if case.get("position_ids"):
            position_ids(w, "text_model.embeddings.position_ids", t["P"])
        tower_layers(w, t["d"], t["d_ff"], t["L"])
        w.layer_norm("final_layer_norm", t["d"])
        w.prefix, w.W = "vision_model.", {}
    e = "embeddings."
    w.normal(e + "class_embedding", (d,), 0.5)
    w.normal(e + "patch_embedding.weight", (d, C, p, p), 1.2 / math.sqrt(C * p * p))  # no bias
    w.normal(e + "position_embedding.weight", (1 + n, d), 0.3)
    if case.get("position_ids"):
        position_ids(w, "vision_model.embeddings.position_ids", 1 + n)
    w.layer_norm("pre_layrnorm", d)  # sic
    tower_layers(w, d, vision["intermediate_size"], vision["num_hidden_layers"])
    w.layer_norm("post_layernorm", d)  # the pooled [CLS]'s: not in last_hidden_state
    if case["whole"]:
        P = case["projection_dim"]
        for name, shape in (("visual_projection.weight", (P, d)), ("text_projection.weight", (P, case["text"]["d"]))):
            w.add(name, w.rng.standard_normal(shape) / math.sqrt(shape[1]), file_name=name)
        w.add("logit_scale", np.float32(2.6592), file_name="logit_scale")  # a 0-d tensor
    return w


def clip_case(case):
    cfg, vision = clip_config(case)
    return cfg, vision, clip_weights(case, vision), clip_preprocessor(case)

# [SECTION] SigLIP: SiglipVisionModel -----------------------------------------------------------------


def siglip_config(case):
    """config.json as save_pretrained writes a SiglipVisionConfig (vision_use_head: read by
    SiglipVisionTransformer, True when absent)."""
    return {"_name_or_path": case.get("name_or_path"), "architectures": ["SiglipVisionModel"],
            "attention_dropout": 0.0, "hidden_act": "gelu_pytorch_tanh", "hidden_size": case["d"],
            "image_size": case["image_size"], "intermediate_size": case["d_ff"], "layer_norm_eps": 1e-06,
            "model_type": "siglip_vision_model", "num_attention_heads": case["H"], "num_channels": 3,
            "num_hidden_layers": case["L"], "patch_size": case["patch_size"], "torch_dtype": torch_dtype(case),
            "transformers_version": TRANSFORMERS_VERSION, "vision_use_head": case["head"]}


def siglip_preprocessor(case):  # google/siglip-base-patch16-224's
    return {"do_normalize": True, "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
            "image_processor_type": "SiglipImageProcessor", "image_std": [0.5, 0.5, 0.5],
            "processor_class": "SiglipProcessor", "resample": case["resample"], "rescale_factor": RESCALE,
            "size": {"height": case["image_size"], "width": case["image_size"]}}


def siglip_weights(case, cfg):
    """SiglipVisionModel's tensors in state_dict order, "vision_model." + …; with vision_use_head
    the SiglipMultiheadAttentionPoolingHead's (probe, nn.MultiheadAttention's packed in_proj,
    layernorm, mlp) after post_layernorm."""
    d, d_ff, p, C = cfg["hidden_size"], cfg["intermediate_size"], cfg["patch_size"], cfg["num_channels"]
    n = (cfg["image_size"] // p) ** 2
    w = RandomWeights(case["seed"], case["dtype"], "vision_model.")
    e = "embeddings."
    w.normal(e + "patch_embedding.weight", (d, C, p, p), 1.2 / math.sqrt(C * p * p))
    w.normal(e + "patch_embedding.bias", (d,), 0.1)
    w.normal(e + "position_embedding.weight", (n, d), 0.3)  # no [CLS]
    tower_layers(w, d, d_ff, cfg["num_hidden_layers"])
    w.layer_norm("post_layernorm", d)
    if cfg["vision_use_head"]:
        w.normal("head.probe", (1, 1, d), 0.5)
        w.normal("head.attention.in_proj_weight", (3 * d, d), 1.2 / math.sqrt(d))
        w.normal("head.attention.in_proj_bias", (3 * d,), 0.1)
        w.linear("head.attention.out_proj", d, d)
        w.layer_norm("head.layernorm", d)
        w.linear("head.mlp.fc1", d, d_ff)
        w.linear("head.mlp.fc2", d_ff, d)
    return w


def siglip_case(case):
    cfg = siglip_config(case)
    return cfg, cfg, siglip_weights(case, cfg), siglip_preprocessor(case)

# [SECTION] DINOv2: Dinov2Model, Dinov2ForImageClassification, and with registers -----------------------


def dinov2_config(case):
    """config.json as save_pretrained writes a Dinov2Config / Dinov2WithRegistersConfig (the
    backbone's stage_names and out_features/out_indices too, which attnviz does not read)."""
    registers = case.get("registers", 0)
    model_type = "dinov2_with_registers" if registers else "dinov2"
    stem = "Dinov2WithRegisters" if registers else "Dinov2"
    cfg = {"_name_or_path": case.get("name_or_path"),
           "architectures": [stem + ("ForImageClassification" if case["head"] else "Model")],
           "apply_layernorm": True, "attention_probs_dropout_prob": 0.0, "drop_path_rate": 0.0, "hidden_act": "gelu",
           "hidden_dropout_prob": 0.0, "hidden_size": case["d"], "image_size": case["image_size"],
           "initializer_range": 0.02, "layer_norm_eps": 1e-06, "layerscale_value": 1.0, "mlp_ratio": case["mlp_ratio"],
           "model_type": model_type, "num_attention_heads": case["H"], "num_channels": 3,
           "num_hidden_layers": case["L"], "out_features": [f"stage{case['L']}"], "out_indices": [case["L"]],
           "patch_size": case["patch_size"], "qkv_bias": True, "reshape_hidden_states": True,
           "stage_names": ["stem"] + [f"stage{i + 1}" for i in range(case["L"])], "torch_dtype": torch_dtype(case),
           "transformers_version": TRANSFORMERS_VERSION, "use_swiglu_ffn": case.get("swiglu", False)}
    if registers:
        cfg["num_register_tokens"] = registers
    else:
        cfg["use_mask_token"] = True
    if case["head"]:
        cfg["id2label"] = {str(i): name for i, name in enumerate(LABELS)}
        cfg["label2id"] = {name: i for i, name in enumerate(LABELS)}
    return cfg


def dinov2_preprocessor(case):
    """BitImageProcessor's, as facebook/dinov2-* ship it (shortest edge 256, crop 224), at the
    case's sizes; no crop where the case has none."""
    prep = {"do_center_crop": case["crop"] is not None, "do_convert_rgb": True, "do_normalize": True,
            "do_rescale": True, "do_resize": True, "image_mean": [0.485, 0.456, 0.406],
            "image_processor_type": "BitImageProcessor", "image_std": [0.229, 0.224, 0.225],
            "resample": case["resample"], "rescale_factor": RESCALE, "size": {"shortest_edge": case["shortest_edge"]}}
    if case["crop"] is not None:
        prep["crop_size"] = {"height": case["crop"], "width": case["crop"]}
    return prep


def dinov2_weights(case, cfg):
    """Dinov2Model's tensors in state_dict order (prefixed "dinov2." / "dinov2_with_registers."
    under the classifier); the mask token is in the file and not read; the LayerScale factors
    drawn around 0.5 (the Hub's are small and positive), the rest make_models' scales."""
    d, p, C = cfg["hidden_size"], cfg["patch_size"], cfg["num_channels"]
    hidden = int(d * cfg["mlp_ratio"])
    n = (cfg["image_size"] // p) ** 2
    registers = cfg.get("num_register_tokens", 0)
    prefix = ("dinov2_with_registers." if registers else "dinov2.") if case["head"] else ""
    w = RandomWeights(case["seed"], case["dtype"], prefix)
    e = "embeddings."
    w.normal(e + "cls_token", (1, 1, d), 0.5)
    w.normal(e + "mask_token", (1, d), 0.5)
    if registers:
        w.normal(e + "register_tokens", (1, registers, d), 0.5)
    w.normal(e + "position_embeddings", (1, 1 + n, d), 0.3)
    w.normal(e + "patch_embeddings.projection.weight", (d, C, p, p), 1.2 / math.sqrt(C * p * p))
    w.normal(e + "patch_embeddings.projection.bias", (d,), 0.1)
    for i in range(cfg["num_hidden_layers"]):
        lp = f"encoder.layer.{i}."
        w.layer_norm(lp + "norm1", d)
        for name in ("query", "key", "value"):
            w.linear(lp + "attention.attention." + name, d, d)
        w.linear(lp + "attention.output.dense", d, d)
        w.normal(lp + "layer_scale1.lambda1", (d,), 0.2, mean=0.5)
        w.layer_norm(lp + "norm2", d)
        if cfg["use_swiglu_ffn"]:
            h = (int(hidden * 2 / 3) + 7) // 8 * 8
            w.linear(lp + "mlp.weights_in", d, 2 * h)
            w.linear(lp + "mlp.weights_out", h, d)
        else:
            w.linear(lp + "mlp.fc1", d, hidden)
            w.linear(lp + "mlp.fc2", hidden, d)
        w.normal(lp + "layer_scale2.lambda1", (d,), 0.2, mean=0.5)
    w.layer_norm("layernorm", d)
    if case["head"]:  # Dinov2ForImageClassification: nn.Linear(2·d, labels), never under the prefix
        for name, shape, std in (("classifier.weight", (len(LABELS), 2 * d), 1.2 / math.sqrt(2 * d)),
                                 ("classifier.bias", (len(LABELS),), 0.1)):
            w.add(name, std * w.rng.standard_normal(shape), file_name=name)
    return w


def dinov2_case(case):
    cfg = dinov2_config(case)
    return cfg, cfg, dinov2_weights(case, cfg), dinov2_preprocessor(case)

# [SECTION] Idefics3 / SmolVLM: Idefics3ForConditionalGeneration, SmolVLMForConditionalGeneration -------

# The three vision-language cases: the same tiny sizes, each its own picture, processor and text.
#   vision tower 32 wide, 2 layers, 4 heads, MLP 64, 32-pixel views of 8-pixel patches (4 x 4 = 16
#   patches a view), scale_factor 2 (image_seq_len 4); Llama 32 wide, 2 layers, 4 heads, 2 KV heads,
#   MLP 64, rope_theta 10000
VLM_VISION = dict(d=32, L=2, H=4, d_ff=64, image_size=32, patch_size=8)
VLM_TEXT = dict(d=32, L=2, H=4, KV=2, d_ff=64, P=128, theta=10000.0)
VLM_CASES = [
    # Idefics3 split into tiles: a 150 x 77 picture, its longest edge to 96 (the height 49.28 -> 49,
    # odd -> 50), then to multiples of 32: 96 x 64, 2 rows x 3 columns of tiles and the global view;
    # the text without <image> (the picture goes first); an lm_head of its own
    dict(case="idefics3", model_type="idefics3", vision_type="idefics3_vision", picture=(150, 77), longest=96,
         split=True, text="What is in this picture?", dtype="F32", seed=71, tied=False,
         name_or_path="attnviz/tiny-idefics3"),
    # SmolVLM (SmolVLM2's classes and processor names) without splitting: 45 x 61 -> 48 x 64 (47.2 ->
    # 47, odd -> 48) -> the one 32 x 32 view; <image> first in the text; bfloat16, the LM head tied
    dict(case="smolvlm", model_type="smolvlm", vision_type="smolvlm_vision", picture=(45, 61), longest=64,
         split=False, text="<image>Describe the picture.", dtype="BF16", seed=72, tied=True),
    # Idefics3 with <image> in the middle of the text: 41 x 90 -> 30 x 64 (29.2 -> 29 -> 30) -> 32 x 64:
    # 2 rows x 1 column; float16; a vision_config that leaves hidden_act, layer_norm_eps and
    # num_channels to Idefics3VisionConfig's defaults (model_type "idefics3", as older files say)
    dict(case="idefics3-middle", model_type="idefics3", vision_type="idefics3", picture=(41, 90), longest=64,
         split=True, text="A cat<image>on a mat.", dtype="F16", seed=73, tied=False, vision_defaults=True),
]
# The processor's special tokens (processing_idefics3.py), added to the byte-level BPE after its
# vocabulary, all special and not normalized; <|im_start|> the BOS the post-processor adds
VLM_BOS = "<|im_start|>"
VLM_ADDED = [VLM_BOS, "<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"] + \
    [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]


def added_ids(vocab, tokens):
    """{token: id} for the added tokens, numbered after the BPE's vocabulary in their order."""
    return {t: len(vocab) + i for i, t in enumerate(tokens)}


def vlm_tokenizer(license_text, tokens=VLM_ADDED):
    """-> (vocab, merges, added {token: id}): tests/model/make_models.py's byte-level BPE of the
    Llama-like cases, the added tokens (VLM_ADDED, or a family's own: GEMMA3_ADDED) after it."""
    vocab, merges = gpt2_tokenizer(license_text, 220)
    return vocab, merges, added_ids(vocab, tokens)


def write_vlm_tokenizer(folder, vocab, merges, added, bos_token=VLM_BOS):
    """tokenizer.json: ByteLevel pre-tokenizer and BPE (as make_models' write_bpe_tokenizer_json),
    the added tokens (ids after the model's vocabulary, or a token of it with its own id), and
    TemplateProcessing with the BOS (bos_token: <|im_start|> for Idefics3 / SmolVLM, <bos> for
    Gemma 3), or with bos_token None the ByteLevel post-processor Qwen2's tokenizer.json has (no
    BOS: Qwen2.5-VL)."""
    if bos_token is None:
        post = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    else:
        bos = added[bos_token]
        post = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": bos_token, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": bos_token, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {bos_token: {"id": bos_token, "ids": [bos], "tokens": [bos_token]}}}
    write_json(os.path.join(folder, "tokenizer.json"),
               {"version": "1.0",
                "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                                  "normalized": False, "special": True} for t, i in added.items()],
                "normalizer": None,
                "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
                "post_processor": post,
                "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
                "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                          "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                          "vocab": vocab, "merges": [a + " " + b for a, b in merges]}}, indent=1)


def vlm_encode(vocab, merges, added, text, bos_token=VLM_BOS):
    """As the tokenizers library with add_special_tokens=True: the text cut at the added tokens
    (leftmost, longest first), each piece between them pre-tokenized and BPE'd on its own
    (gpt2_encode), the added tokens' own ids; the BOS (bos_token's id) first, none when bos_token
    is None (the ByteLevel post-processor adds nothing)."""
    pattern = re.compile("|".join(re.escape(t) for t in sorted(added, key=len, reverse=True)))
    ids, at = ([] if bos_token is None else [added[bos_token]]), 0
    for m in pattern.finditer(text):
        ids += gpt2_encode(vocab, merges, text[at:m.start()]) + [added[m.group()]]
        at = m.end()
    return ids + gpt2_encode(vocab, merges, text[at:])


def idefics3_prompt(text, rows, cols, seq_len):
    """processing_idefics3.py's prompt: the one <image> of the text (put first when the text has
    none: attnviz's rule) expanded: per tile <fake_token_around_image><row_R_col_C> and seq_len
    <image>, "\n" after each row of tiles, then "\n<fake_token_around_image><global-img>", seq_len
    <image>, <fake_token_around_image>; not split (rows = cols = 0): <fake_token_around_image>
    <global-img>, seq_len <image>, <fake_token_around_image>."""
    fake, image, global_img = "<fake_token_around_image>", "<image>", "<global-img>"
    if image not in text:
        text = image + text
    assert text.count(image) == 1, text
    expanded = ""
    for r in range(rows):
        expanded += "".join(f"{fake}<row_{r + 1}_col_{c + 1}>" + image * seq_len for c in range(cols)) + "\n"
    expanded += ("\n" if rows or cols else "") + fake + global_img + image * seq_len + fake
    before, after = text.split(image)
    return before + expanded + after


def vlm_config(case, V, image_token_id):
    """config.json as save_pretrained writes an Idefics3Config / SmolVLMConfig: the vision_config
    (all its fields, or only the ones the case does not leave to the defaults), the Llama
    text_config (make_models' llama_config; vocab_size V), image_token_id, scale_factor, the tie."""
    v = VLM_VISION
    vision = {"hidden_size": v["d"], "image_size": v["image_size"], "intermediate_size": v["d_ff"],
              "model_type": case["vision_type"], "num_attention_heads": v["H"], "num_hidden_layers": v["L"],
              "patch_size": v["patch_size"]}
    if not case.get("vision_defaults"):
        vision.update({"attention_dropout": 0.0, "hidden_act": "gelu_pytorch_tanh", "initializer_range": 0.02,
                       "layer_norm_eps": 1e-5, "num_channels": 3})
    text_case = dict(VLM_TEXT, type="llama", dtype=case["dtype"], tied=case["tied"])
    text = llama_config(text_case, V)
    for k in ("_name_or_path", "torch_dtype", "transformers_version"):
        text.pop(k)
    text.update({"bos_token_id": V - len(VLM_ADDED), "eos_token_id": V - len(VLM_ADDED) + 3, "rms_norm_eps": 1e-5})
    stem = {"idefics3": "Idefics3", "smolvlm": "SmolVLM"}[case["model_type"]]
    return {"_name_or_path": case.get("name_or_path"), "architectures": [stem + "ForConditionalGeneration"],
            "image_token_id": image_token_id, "model_type": case["model_type"], "scale_factor": 2,
            "text_config": text, "tie_word_embeddings": case["tied"], "torch_dtype": torch_dtype(case),
            "transformers_version": TRANSFORMERS_VERSION, "use_cache": True, "vision_config": vision, "vocab_size": V}


def vlm_preprocessor(case):
    """preprocessor_config.json as the Hub's SmolVLM files have it (Idefics3ImageProcessor's, or
    SmolVLMImageProcessor's for model_type smolvlm), at the case's sizes."""
    stem = {"idefics3": "Idefics3", "smolvlm": "SmolVLM"}[case["model_type"]]
    return {"do_convert_rgb": True, "do_image_splitting": case["split"], "do_normalize": True, "do_pad": True,
            "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
            "image_processor_type": stem + "ImageProcessor", "image_std": [0.5, 0.5, 0.5],
            "max_image_size": {"longest_edge": VLM_VISION["image_size"]}, "processor_class": stem + "Processor",
            "resample": 1, "rescale_factor": RESCALE, "size": {"longest_edge": case["longest"]}}


def vision_tower_weights(w, v):
    """The SigLIP-like tower's tensors (SiglipVisionTransformer's names under w's prefix: the patch
    conv with bias, position_embedding, the layers, post_layernorm) drawn into w; v the vision
    config (hidden_size, patch_size, image_size, intermediate_size, num_hidden_layers). -> d"""
    d, p, C = v["hidden_size"], v["patch_size"], v.get("num_channels", 3)
    w.normal("embeddings.patch_embedding.weight", (d, C, p, p), 1.2 / math.sqrt(C * p * p))
    w.normal("embeddings.patch_embedding.bias", (d,), 0.1)
    w.normal("embeddings.position_embedding.weight", ((v["image_size"] // p) ** 2, d), 0.3)
    tower_layers(w, d, v["intermediate_size"], v["num_hidden_layers"])
    w.layer_norm("post_layernorm", d)
    return d


def vlm_weights(case, cfg):
    """Idefics3ForConditionalGeneration's tensors: "model.vision_model." + the tower's (SigLIP's
    names: patch conv with bias, position_embedding, the layers, post_layernorm),
    "model.connector.modality_projection.proj.weight" [d_text, s²·d_vision] (no bias),
    "model.text_model." + LlamaModel's (make_models' llama_weights, its own seed), "lm_head.weight"
    unless tied. -> (RandomWeights of the file's tensors, W for reference.idefics3_forward: the
    names without "model.")"""
    v, t = cfg["vision_config"], cfg["text_config"]
    w = RandomWeights(case["seed"], case["dtype"], "model.vision_model.")
    d = vision_tower_weights(w, v)
    W = {"vision_model." + n: x for n, x in w.W.items()}
    w.prefix, n_in = "model.", d * cfg["scale_factor"] ** 2
    W["connector.modality_projection.proj.weight"] = w.normal("connector.modality_projection.proj.weight",
                                                              (t["hidden_size"], n_in), 1.2 / math.sqrt(n_in))
    text = llama_weights(dict(seed=case["seed"] + 100, dtype=case["dtype"], prefix=True), t)
    for name, dtype, shape, raw in text.tensors:  # "model.…" -> "model.text_model.…"; lm_head as it is
        w.tensors.append(("model.text_model." + name[len("model."):] if name.startswith("model.") else name,
                          dtype, shape, raw))
    W.update({("text_model." + n if n != "lm_head.weight" else n): x for n, x in text.W.items()})
    return w, W


def check_pixel_shuffle():
    """reference.pixel_shuffle (a loop over the blocks) against Idefics3Connector.pixel_shuffle's
    view / permute / reshape sequence, on a 4 x 4 grid and on a 6 x 6 one with s = 3."""
    for G, s, d in ((4, 2, 3), (6, 3, 2), (8, 2, 5)):
        x = torch.arange(G * G * d, dtype=torch.float64).reshape(G * G, d)
        y = x.view(G, G, d).view(G, G // s, d * s).permute(1, 0, 2).reshape(G // s, G // s, d * s * s)
        y = y.permute(1, 0, 2).reshape(G * G // (s * s), d * s * s)
        assert torch.equal(reference.pixel_shuffle(x, s), y), f"pixel_shuffle G={G} s={s}"


def make_vlm_case(out, case, vocab, merges, added):
    V = len(vocab) + len(added)
    cfg = vlm_config(case, V, added["<image>"])
    weights, W = vlm_weights(case, cfg)
    folder = case_folder(out, case, dict(cfg), weights)
    write_vlm_tokenizer(folder, vocab, merges, added)
    prep = vlm_preprocessor(case)
    write_json(os.path.join(folder, "preprocessor_config.json"), prep, indent=2)
    seq_len = (VLM_VISION["image_size"] // VLM_VISION["patch_size"]) ** 2 // cfg["scale_factor"] ** 2
    write_json(os.path.join(folder, "processor_config.json"),
               {"image_seq_len": seq_len, "processor_class": prep["processor_class"]}, indent=2)
    picture(case).save(os.path.join(folder, "image.png"))
    processed = idefics3_process(Image.open(os.path.join(folder, "image.png")), prep)
    views, rows, cols = processed["views"], processed["rows"], processed["cols"]
    assert len(views) == (rows * cols + 1 if rows else 1)
    prompt = idefics3_prompt(case["text"], rows, cols, seq_len)
    ids = vlm_encode(vocab, merges, added, prompt)
    names = {i: t for t, i in vocab.items()} | {i: t for t, i in added.items()}
    image_tokens = [j for j, i in enumerate(ids) if i == added["<image>"]]
    assert len(image_tokens) == len(views) * seq_len and max(ids) < V
    run = reference.idefics3_forward(W, cfg, ids, views)
    G = VLM_VISION["image_size"] // VLM_VISION["patch_size"]
    inputs = {"image": "image.png", "text": case["text"], "prompt": prompt, "ids": ids,
              "tokens": [names[i] for i in ids], "image_tokens": image_tokens,
              "tiles": {"rows": rows, "cols": cols},
              "patches": {"rows": G, "cols": G, "size": VLM_VISION["patch_size"], "first": 0},
              "sizes": {"picture": list(case["picture"]), "resized": list(processed["resized"]),
                        "encoder": processed["encoder"] and list(processed["encoder"])},
              "pixel_values": views.tolist()}
    expected_json(folder, case, cfg["model_type"], inputs, run)
    return case["case"]

# [SECTION] Gemma 3 with images: Gemma3ForConditionalGeneration ----------------------------------------

# The two Gemma 3 cases: the same tiny sizes, each its own layout, dtype, picture and text.
#   SigLIP 32 wide, 2 layers, 4 heads, MLP 64, 32-pixel views of 4-pixel patches (8 x 8 = 64 patches),
#   average-pooled 2 x 2 to mm_tokens_per_image 16; Gemma 3 text 32 wide (head_dim 8), 2 layers
#   (sliding, full), 4 heads, 2 KV heads, MLP 64, a window of 4 (shorter than a picture's 16 rows:
#   the picture's block reaches past it), query_pre_attn_scalar 8; full layers' rope linear x8 at
#   θ 1e6, the sliding layers' default at θ 1e4 (as the Hub's gemma-3-4b-it)
GEMMA3_VISION = dict(d=32, L=2, H=4, d_ff=64, image_size=32, patch_size=4, mm=16)
GEMMA3_TEXT = dict(d=32, L=2, H=4, KV=2, head_dim=8, d_ff=64, window=4, P=256, scalar=8)
GEMMA3_CASES = [
    # transformers 5's layout and config.json (save_pretrained of a Gemma3Config in 5.17: rope_parameters
    # per layer type, layer_types, dtype, every field); float32; a 70 x 45 picture (the resize to
    # 32 x 32 stretches it); no <start_of_image> in the text: the picture goes first
    dict(case="gemma3", layout="transformers5", picture=(70, 45), text="What is in this picture?", dtype="F32",
         seed=74, name_or_path="attnviz/tiny-gemma3"),
    # the layout and config.json the Hub's google/gemma-3-*-it files were uploaded in (transformers
    # 4.50: "language_model.model.…", "vision_tower.…", "multi_modal_projector.…"; a text_config with
    # rope_scaling and sliding_window_pattern, rope_theta / rope_local_base_freq / rms_norm_eps left to
    # Gemma3TextConfig's defaults, a vision_config without layer_norm_eps and hidden_act, torch_dtype,
    # no tie_word_embeddings, eos_token_id a list); bfloat16; a 40 x 40 picture; the picture mid-text
    dict(case="gemma3-legacy", layout="legacy", picture=(40, 40), text="Look: <start_of_image> what colour is the disc?",
         dtype="BF16", seed=75),
]
# Gemma's tokenizer's special tokens the processor and the model name, added to the byte-level BPE
# after its vocabulary, all special and not normalized; <bos> the BOS the post-processor adds
GEMMA3_BOS, GEMMA3_BOI, GEMMA3_EOI, GEMMA3_IMAGE = "<bos>", "<start_of_image>", "<end_of_image>", "<image_soft_token>"
GEMMA3_ADDED = ["<pad>", "<eos>", GEMMA3_BOS, GEMMA3_BOI, GEMMA3_EOI, GEMMA3_IMAGE]
# Gemma3Model's tensors under each layout's prefixes (Gemma3ForConditionalGeneration's
# _checkpoint_conversion_mapping: "^language_model.model" -> "model.language_model", "^vision_tower"
# -> "model.vision_tower", "^multi_modal_projector" -> "model.multi_modal_projector")
GEMMA3_PREFIXES = {
    "transformers5": {"language_model.": "model.language_model.", "vision_tower.": "model.vision_tower.",
                      "multi_modal_projector.": "model.multi_modal_projector."},
    "legacy": {"language_model.": "language_model.model.", "vision_tower.": "vision_tower.",
               "multi_modal_projector.": "multi_modal_projector."},
}


def gemma3_config(case, V, added):
    """config.json of a Gemma3ForConditionalGeneration: transformers 5.17's save_pretrained of a
    Gemma3Config (the text_config as /work/shared/fixtures/transformers-5.17/gemma3_text/config.json
    has it, less its architectures: rope_parameters per layer type, layer_types, the
    _sliding_window_pattern 6 it writes whatever layer_types say; the vision_config's every field),
    or the Hub's gemma-3-*-it form (layout "legacy": transformers 4.50's, only the fields that differ
    from the classes' defaults, as google/gemma-3-4b-it's config.json). The ids of <start_of_image>,
    <end_of_image>, <image_soft_token> as boi_token_index, eoi_token_index, image_token_index."""
    v, t = GEMMA3_VISION, GEMMA3_TEXT
    ids = {"boi_token_index": added[GEMMA3_BOI], "eoi_token_index": added[GEMMA3_EOI],
           "image_token_index": added[GEMMA3_IMAGE]}
    if case["layout"] == "legacy":
        text = {"head_dim": t["head_dim"], "hidden_size": t["d"], "intermediate_size": t["d_ff"],
                "max_position_embeddings": t["P"], "model_type": "gemma3_text", "num_attention_heads": t["H"],
                "num_hidden_layers": t["L"], "num_key_value_heads": t["KV"], "query_pre_attn_scalar": t["scalar"],
                "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": t["window"],
                "sliding_window_pattern": 2, "vocab_size": V}
        vision = {"hidden_size": v["d"], "image_size": v["image_size"], "intermediate_size": v["d_ff"],
                  "model_type": "siglip_vision_model", "num_attention_heads": v["H"], "num_hidden_layers": v["L"],
                  "patch_size": v["patch_size"], "vision_use_head": False}
        return dict({"_name_or_path": case.get("name_or_path"), "architectures": ["Gemma3ForConditionalGeneration"],
                     "eos_token_id": [added["<eos>"]], "initializer_range": 0.02, "mm_tokens_per_image": v["mm"],
                     "model_type": "gemma3", "text_config": text, "torch_dtype": torch_dtype(case),
                     "transformers_version": "4.50.0.dev0", "vision_config": vision}, **ids)
    text = {"_sliding_window_pattern": 6, "attention_bias": False, "attention_dropout": 0.0,
            "attn_logit_softcapping": None, "bos_token_id": added[GEMMA3_BOS], "dtype": torch_dtype(case),
            "eos_token_id": added["<eos>"], "final_logit_softcapping": None, "head_dim": t["head_dim"],
            "hidden_activation": "gelu_pytorch_tanh", "hidden_size": t["d"], "initializer_range": 0.02,
            "intermediate_size": t["d_ff"], "layer_types": ["sliding_attention", "full_attention"],
            "max_position_embeddings": t["P"], "model_type": "gemma3_text", "num_attention_heads": t["H"],
            "num_hidden_layers": t["L"], "num_key_value_heads": t["KV"], "pad_token_id": added["<pad>"],
            "query_pre_attn_scalar": t["scalar"], "rms_norm_eps": 1e-06,
            "rope_parameters": {"full_attention": {"factor": 8.0, "rope_theta": 1000000.0, "rope_type": "linear"},
                                "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
            "sliding_window": t["window"], "tie_word_embeddings": True, "use_bidirectional_attention": False,
            "use_cache": True, "vocab_size": V}
    vision = {"attention_dropout": 0.0, "hidden_act": "gelu_pytorch_tanh", "hidden_size": v["d"],
              "image_size": v["image_size"], "intermediate_size": v["d_ff"], "layer_norm_eps": 1e-06,
              "model_type": "siglip_vision_model", "num_attention_heads": v["H"], "num_channels": 3,
              "num_hidden_layers": v["L"], "patch_size": v["patch_size"], "vision_use_head": False}
    return dict({"_name_or_path": case.get("name_or_path"), "architectures": ["Gemma3ForConditionalGeneration"],
                 "dtype": torch_dtype(case), "initializer_range": 0.02, "mm_tokens_per_image": v["mm"],
                 "model_type": "gemma3", "text_config": text, "tie_word_embeddings": True,
                 "transformers_version": "5.17.0", "vision_config": vision}, **ids)


def gemma3_preprocessor(case):
    """preprocessor_config.json as the Hub's gemma-3 files have it (Gemma3ImageProcessor: resize to
    {height, width} bilinear, rescale, mean = std = 0.5, no pan and scan), at the case's size."""
    S = GEMMA3_VISION["image_size"]
    return {"do_convert_rgb": None, "do_normalize": True, "do_pan_and_scan": None, "do_rescale": True,
            "do_resize": True, "image_mean": [0.5, 0.5, 0.5], "image_processor_type": "Gemma3ImageProcessor",
            "image_seq_length": GEMMA3_VISION["mm"], "image_std": [0.5, 0.5, 0.5], "pan_and_scan_max_num_crops": None,
            "pan_and_scan_min_crop_size": None, "pan_and_scan_min_ratio_to_activate": None,
            "processor_class": "Gemma3Processor", "resample": 2, "rescale_factor": RESCALE,
            "size": {"height": S, "width": S}}


def gemma3_weights(case, cfg):
    """Gemma3ForConditionalGeneration's tensors under the case's layout's prefixes (GEMMA3_PREFIXES):
    the SigLIP tower ("vision_tower.vision_model." + SiglipVisionTransformer's names),
    "multi_modal_projector.mm_input_projection_weight" [d_vision, d_text] and
    "multi_modal_projector.mm_soft_emb_norm.weight" [d_vision] (an offset from 1, as Gemma's norms),
    the text model (make_models' llama_weights of a gemma3_text config, its own seed; no lm_head: tied).
    -> (RandomWeights of the file's tensors, W for reference.gemma3_forward: Gemma3Model's names)"""
    prefixes = GEMMA3_PREFIXES[case["layout"]]
    vcfg, tcfg = reference.gemma3_vision_config(cfg), reference.gemma3_text_config(cfg)
    w = RandomWeights(case["seed"], case["dtype"], prefixes["vision_tower."] + "vision_model.")
    dv = vision_tower_weights(w, vcfg)
    W = {"vision_tower.vision_model." + n: x for n, x in w.W.items()}
    w.prefix = prefixes["multi_modal_projector."]
    for name, shape, std in (("mm_input_projection_weight", (dv, tcfg["hidden_size"]), 1.2 / math.sqrt(dv)),
                             ("mm_soft_emb_norm.weight", (dv,), 0.1)):
        W["multi_modal_projector." + name] = w.normal(name, shape, std)
    text = llama_weights(dict(seed=case["seed"] + 100, dtype=case["dtype"], prefix=True), tcfg)
    for name, dtype, shape, raw in text.tensors:  # "model.…" -> the layout's language model prefix
        assert name.startswith("model."), name  # tied: no lm_head
        w.tensors.append((prefixes["language_model."] + name[len("model."):], dtype, shape, raw))
    W.update({"language_model." + n: x for n, x in text.W.items()})
    return w, W


def gemma3_prompt(text, mm_tokens):
    """processing_gemma3.py's prompt: the text's <start_of_image> (put first when the text has none:
    attnviz's rule, the picture before the text) replaced by full_image_sequence, "\n\n" +
    <start_of_image> + <image_soft_token> x mm_tokens_per_image + <end_of_image> + "\n\n"."""
    if GEMMA3_BOI not in text:
        text = GEMMA3_BOI + text
    assert text.count(GEMMA3_BOI) == 1, text
    return text.replace(GEMMA3_BOI, "\n\n" + GEMMA3_BOI + GEMMA3_IMAGE * mm_tokens + GEMMA3_EOI + "\n\n")


def transformers_gemma3_masks(token_type_ids, window):
    """transformers' own construction, written out as its code reads (modeling_gemma3.py's
    create_causal_mask_mapping and token_type_ids_mask_function, masking_utils.py's causal_mask_function,
    sliding_window_overlay, and_masks, or_masks) on token_type_ids [1, T], broadcast over the
    (query, key) grid instead of vmapped -> {"full_attention", "sliding_attention"}: [T, T] bool,
    True where attending is allowed; and the newest transformers' blockwise_overlay of the same
    groups ((q_group == kv_group) & (q_group >= 0)), which must agree."""
    T = token_type_ids.shape[1]
    # create_causal_mask_mapping: "First find where a new image block starts"
    is_image = token_type_ids == 1
    is_previous_image = torch.nn.functional.pad(is_image.int(), (1, 0), value=0)[:, :-1].bool()
    new_image_start = is_image & ~is_previous_image
    image_group_ids = torch.cumsum(new_image_start.int(), dim=1) - 1
    image_group_ids = torch.where(is_image, image_group_ids, torch.full_like(image_group_ids, -1))

    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):  # token_type_ids_mask_function's
        safe_idx = torch.where(kv_idx < token_type_ids.shape[1], kv_idx, 0)
        token_type_ids_at_kv_idx = token_type_ids[batch_idx, safe_idx]
        token_type_ids_at_kv_idx = torch.where(kv_idx < token_type_ids.shape[1], token_type_ids_at_kv_idx, 0)
        image_group_ids_at_kv_idx = image_group_ids[batch_idx, safe_idx]
        image_group_ids_at_kv_idx = torch.where(kv_idx < image_group_ids.shape[1], image_group_ids_at_kv_idx, -1)
        is_image_block = (token_type_ids[batch_idx, q_idx] == 1) & (token_type_ids_at_kv_idx == 1)
        same_image_block = image_group_ids[batch_idx, q_idx] == image_group_ids_at_kv_idx
        return is_image_block & same_image_block

    def blockwise_overlay(batch_idx, head_idx, q_idx, kv_idx):  # masking_utils' newest form
        q_group, kv_group = image_group_ids[batch_idx, q_idx], image_group_ids[batch_idx, kv_idx]
        return (q_group == kv_group) & (q_group >= 0)

    def causal_mask_function(batch_idx, head_idx, q_idx, kv_idx):
        return kv_idx <= q_idx

    def sliding_window_overlay(batch_idx, head_idx, q_idx, kv_idx):
        return kv_idx > q_idx - window

    def and_masks(*fns):
        def and_mask(batch_idx, head_idx, q_idx, kv_idx):
            result = q_idx.new_ones((), dtype=torch.bool)
            for fn in fns:
                result = result & fn(batch_idx, head_idx, q_idx, kv_idx)
            return result
        return and_mask

    def or_masks(*fns):
        def or_mask(batch_idx, head_idx, q_idx, kv_idx):
            result = q_idx.new_zeros((), dtype=torch.bool)
            for fn in fns:
                result = result | fn(batch_idx, head_idx, q_idx, kv_idx)
            return result
        return or_mask

    b, h, q, kv = torch.tensor(0), torch.tensor(0), torch.arange(T)[:, None], torch.arange(T)[None, :]
    full = or_masks(causal_mask_function, inner_mask)(b, h, q, kv)
    sliding = or_masks(and_masks(sliding_window_overlay, causal_mask_function), inner_mask)(b, h, q, kv)
    for base, got in ((causal_mask_function, full), (and_masks(sliding_window_overlay, causal_mask_function), sliding)):
        assert torch.equal(or_masks(base, blockwise_overlay)(b, h, q, kv), got), "blockwise_overlay disagrees"
    return {"full_attention": full, "sliding_attention": sliding}


def check_gemma3_masks():
    """reference.causal_masked with reference.gemma3_image_blocks against transformers_gemma3_masks on
    sequences with two separate pictures (runs of 5 and 6 image tokens, a run at the very start, a
    run at the very end, adjacent runs split by one text token), windows 4 and 2 and none."""
    img = 9
    for ids in ([1, 2, img, img, img, img, img, 3, 4, 5, img, img, img, img, img, img, 6, 7],
                [img, img, img, 3, img, img, img, img, 4, 5, 6, img, img]):
        tt = torch.tensor([[1 if i == img else 0 for i in ids]])
        allowed = reference.gemma3_image_blocks(ids, img)
        for window in (4, 2, 1):
            want = transformers_gemma3_masks(tt, window)
            assert torch.equal(~reference.causal_masked(len(ids), 0, allowed), want["full_attention"]), "full mask"
            assert torch.equal(~reference.causal_masked(len(ids), window, allowed), want["sliding_attention"]), \
                f"sliding mask, window {window}"


def check_gemma3_projector():
    """reference.gemma3_projector against Gemma3MultiModalProjector.forward as the module runs it
    (transpose, reshape to [1, d_v, G, G], nn.AvgPool2d(k, stride=k), flatten(2), transpose, the
    Gemma RMSNorm written as Gemma3RMSNorm's forward in float64 for its float32, the product with
    mm_input_projection_weight), for 8 x 8 patches to 16 and to 4 tokens, 6 x 6 to 4."""
    rng = np.random.default_rng(5)
    for G, mm, dv, dt in ((8, 16, 6, 5), (8, 4, 3, 7), (6, 4, 4, 4)):
        x = torch.tensor(rng.standard_normal((G * G, dv)))
        W = {"multi_modal_projector.mm_input_projection_weight": torch.tensor(rng.standard_normal((dv, dt))),
             "multi_modal_projector.mm_soft_emb_norm.weight": torch.tensor(0.1 * rng.standard_normal(dv))}
        vcfg = {"image_size": G * 4, "patch_size": 4, "layer_norm_eps": 1e-6}
        k = G // int(mm ** 0.5)
        vision_outputs = x[None]
        batch_size, _, hidden_size = vision_outputs.shape
        reshaped = vision_outputs.transpose(1, 2).reshape(batch_size, hidden_size, G, G).contiguous()
        pooled = torch.nn.AvgPool2d(kernel_size=k, stride=k)(reshaped).flatten(2).transpose(1, 2)
        normed = pooled * torch.rsqrt(pooled.pow(2).mean(-1, keepdim=True) + 1e-6)
        normed = normed * (1.0 + W["multi_modal_projector.mm_soft_emb_norm.weight"])
        want = torch.matmul(normed, W["multi_modal_projector.mm_input_projection_weight"])[0]
        got = reference.gemma3_projector(x, W, vcfg, mm)
        assert got.shape == want.shape == (mm, dt) and float((got - want).abs().max()) < 1e-12, \
            f"projector G={G} mm={mm}: {float((got - want).abs().max())}"


def make_gemma3_case(out, case, vocab, merges, added):
    V = len(vocab) + len(added)
    cfg = gemma3_config(case, V, added)
    weights, W = gemma3_weights(case, cfg)
    folder = case_folder(out, case, dict(cfg), weights)
    write_vlm_tokenizer(folder, vocab, merges, added, bos_token=GEMMA3_BOS)
    prep = gemma3_preprocessor(case)
    write_json(os.path.join(folder, "preprocessor_config.json"), prep, indent=2)
    mm = cfg["mm_tokens_per_image"]
    write_json(os.path.join(folder, "processor_config.json"),
               {"image_seq_length": mm, "processor_class": prep["processor_class"]}, indent=2)
    picture(case).save(os.path.join(folder, "image.png"))
    pixel_values = process(Image.open(os.path.join(folder, "image.png")), prep)  # float32 [3, S, S]
    vcfg = reference.gemma3_vision_config(cfg)
    tower = {n[len("vision_tower.vision_model."):]: x for n, x in W.items() if n.startswith("vision_tower.vision_model.")}
    check_patches(tower, vcfg, ("embeddings.patch_embedding.weight", "embeddings.patch_embedding.bias"), pixel_values)
    prompt = gemma3_prompt(case["text"], mm)
    ids = vlm_encode(vocab, merges, added, prompt, bos_token=GEMMA3_BOS)
    names = {i: t for t, i in vocab.items()} | {i: t for t, i in added.items()}
    image_tokens = [j for j, i in enumerate(ids) if i == added[GEMMA3_IMAGE]]
    assert len(image_tokens) == mm and image_tokens == list(range(image_tokens[0], image_tokens[0] + mm)) and max(ids) < V
    run = reference.gemma3_forward(W, cfg, ids, pixel_values[None])
    # the run's maps are zero exactly where transformers' masks forbid (its image block reaching past
    # the sliding window and ahead of the causal limit)
    masks = transformers_gemma3_masks(torch.tensor([[1 if i == added[GEMMA3_IMAGE] else 0 for i in ids]]),
                                      GEMMA3_TEXT["window"])
    for layer, window in enumerate(reference.layer_kinds(reference.gemma3_text_config(cfg))):
        allowed = masks["sliding_attention" if window else "full_attention"]
        assert torch.equal(run["attention"][layer] > 0, allowed.expand_as(run["attention"][layer])), f"layer {layer}'s zeros"
    S, G = GEMMA3_VISION["image_size"], GEMMA3_VISION["image_size"] // GEMMA3_VISION["patch_size"]
    inputs = {"image": "image.png", "text": case["text"], "prompt": prompt, "ids": ids,
              "tokens": [names[i] for i in ids], "image_tokens": image_tokens, "tiles": {"rows": 0, "cols": 0},
              "patches": {"rows": G, "cols": G, "size": GEMMA3_VISION["patch_size"], "first": 0},
              "sizes": {"picture": list(case["picture"]), "resized": [S, S], "encoder": None},
              "pixel_values": pixel_values[None].tolist()}
    expected_json(folder, case, cfg["model_type"], inputs, run)
    return case["case"]

# [SECTION] Qwen2.5-VL: Qwen2_5_VLForConditionalGeneration -------------------------------------------

# The two Qwen2.5-VL cases: the same tiny sizes, each its own layout, dtype, picture, processor and text.
#   the tower 32 wide, 3 blocks (the middle one full attention, the others within windows of 16
#   pixels: 2 x 2 merged tokens, 4 x 4 patches), 2 heads (head_dim 16: 4 frequencies for the rows,
#   4 for the columns), MLP 48, 4-pixel patches over 2 frames, merged 2 x 2 into the text's width;
#   Qwen2 text 32 wide (head_dim 8), 2 layers, 4 heads, 2 KV heads, MLP 64, rope_theta 1e6,
#   mrope_section [2, 1, 1] (of the 4 frequencies: 2 time, 1 height, 1 width)
QWEN_VISION = dict(d=32, depth=3, H=2, d_ff=48, patch_size=4, merge=2, temporal=2, window=16, full=[1])
QWEN_TEXT = dict(d=32, L=2, H=4, KV=2, d_ff=64, P=256, theta=1000000.0, mrope=[2, 1, 1])
QWEN_CASES = [
    # transformers 5's layout and config.json (save_pretrained of a Qwen2_5_VLConfig in 5.17: the
    # text_config nested, rope_parameters with mrope_section; its own lm_head); float32; a 45 x 37
    # picture, smart_resize to 48 x 40 (37 / 8 = 4.6 -> 5, 45 / 8 = 5.6 -> 6): 10 x 12 patches,
    # 5 x 6 merged tokens (the windows' last row and column cut short); Qwen2VLImageProcessor's
    # save_pretrained fields (min_pixels and max_pixels, and size's edges); no <|image_pad|> in the
    # text: the picture goes first
    dict(case="qwen2_5_vl", layout="transformers5", picture=(45, 37), resized=(48, 40), min_pixels=256,
         max_pixels=4096, text="What is in this picture?", dtype="F32", seed=76, tied=False,
         name_or_path="attnviz/tiny-qwen2_5_vl"),
    # the layout and config.json the Hub's Qwen/Qwen2.5-VL-3B-Instruct files have (transformers 4.49:
    # the text model's fields at the top, rope_scaling {"type": "mrope", …}, "visual.…", "model.…",
    # tied, torch_dtype, the vision_config's in_chans); the Hub's short preprocessor_config.json (no
    # resample: bicubic); bfloat16; a 70 x 52 picture over max_pixels 2048 (52 / 8 = 6.5 -> 6, half
    # to even; 48 x 72 too many: scaled by √(70·52 / 2048) and floored to 48 x 32): 8 x 12 patches,
    # 4 x 6 merged tokens; the text's own <|vision_start|><|image_pad|><|vision_end|> mid-text
    dict(case="qwen2_5_vl-legacy", layout="legacy", picture=(70, 52), resized=(48, 32), min_pixels=256,
         max_pixels=2048, text="Look: <|vision_start|><|image_pad|><|vision_end|> what colour is the disc?",
         dtype="BF16", seed=77, tied=True),
]
# Qwen2's added tokens in its order (151643…151656), all special and not normalized: <|endoftext|>
# the BPE's own last token (its id in both lists), the others after the vocabulary; no BOS
QWEN_START, QWEN_END, QWEN_PAD = "<|vision_start|>", "<|vision_end|>", "<|image_pad|>"
QWEN_ADDED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
              "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", QWEN_START, QWEN_END,
              "<|vision_pad|>", QWEN_PAD, "<|video_pad|>"]
# Qwen2_5_VLModel's tensors under each layout's prefixes (Qwen2_5_VLForConditionalGeneration's
# _checkpoint_conversion_mapping: "^visual" -> "model.visual", "^model(?!\.(language_model|visual))"
# -> "model.language_model")
QWEN_PREFIXES = {
    "transformers5": {"visual.": "model.visual.", "language_model.": "model.language_model."},
    "legacy": {"visual.": "visual.", "language_model.": "model."},
}


def qwen_added(vocab):
    """{token: id} of QWEN_ADDED: <|endoftext|> the vocabulary's, the rest numbered after it."""
    assert vocab["<|endoftext|>"] == len(vocab) - 1
    return {"<|endoftext|>": vocab["<|endoftext|>"]} | added_ids(vocab, QWEN_ADDED[1:])


def qwen2_5_vl_config(case, V, added):
    """config.json of a Qwen2_5_VLForConditionalGeneration: transformers 5.17's save_pretrained of a
    Qwen2_5_VLConfig (text_config as a qwen2_5_vl_text with rope_parameters {rope_type default,
    mrope_section, rope_theta} and the fields /work/shared/fixtures/transformers-5.17/qwen2's
    config.json has, vision_config every field, dtype), or the Hub's Qwen2.5-VL-3B-Instruct form
    (layout "legacy": the text model's fields at the top, rope_scaling {"type": "mrope",
    "mrope_section"}, rope_theta, torch_dtype, the vision_config as uploaded: in_chans,
    spatial_patch_size). image_token_id, video_token_id, vision_start_token_id, vision_end_token_id
    (and the legacy vision_token_id) the tokenizer's ids of those tokens."""
    v, t = QWEN_VISION, QWEN_TEXT
    ids = {"image_token_id": added[QWEN_PAD], "video_token_id": added["<|video_pad|>"],
           "vision_start_token_id": added[QWEN_START], "vision_end_token_id": added[QWEN_END]}
    if case["layout"] == "legacy":
        vision = {"depth": v["depth"], "hidden_act": "silu", "hidden_size": v["d"], "intermediate_size": v["d_ff"],
                  "num_heads": v["H"], "in_chans": 3, "out_hidden_size": t["d"], "patch_size": v["patch_size"],
                  "spatial_merge_size": v["merge"], "spatial_patch_size": v["patch_size"], "window_size": v["window"],
                  "fullatt_block_indexes": v["full"], "tokens_per_second": 2, "temporal_patch_size": v["temporal"]}
        return dict({"_name_or_path": case.get("name_or_path"), "architectures": ["Qwen2_5_VLForConditionalGeneration"],
                     "attention_dropout": 0.0, "bos_token_id": added["<|endoftext|>"], "eos_token_id": added["<|im_end|>"],
                     "vision_token_id": added["<|vision_pad|>"], "hidden_act": "silu", "hidden_size": t["d"],
                     "initializer_range": 0.02, "intermediate_size": t["d_ff"], "max_position_embeddings": t["P"],
                     "max_window_layers": 70, "model_type": "qwen2_5_vl", "num_attention_heads": t["H"],
                     "num_hidden_layers": t["L"], "num_key_value_heads": t["KV"], "rms_norm_eps": 1e-06,
                     "rope_theta": t["theta"], "sliding_window": 32768, "tie_word_embeddings": case["tied"],
                     "torch_dtype": torch_dtype(case), "transformers_version": "4.49.0.dev0", "use_cache": True,
                     "use_sliding_window": False, "vision_config": vision,
                     "rope_scaling": {"type": "mrope", "mrope_section": t["mrope"]}, "vocab_size": V}, **ids)
    text = {"attention_dropout": 0.0, "bos_token_id": added["<|endoftext|>"], "dtype": torch_dtype(case),
            "eos_token_id": added["<|im_end|>"], "hidden_act": "silu", "hidden_size": t["d"], "initializer_range": 0.02,
            "intermediate_size": t["d_ff"], "layer_types": ["full_attention"] * t["L"], "max_position_embeddings": t["P"],
            "max_window_layers": 80, "model_type": "qwen2_5_vl_text", "num_attention_heads": t["H"],
            "num_hidden_layers": t["L"], "num_key_value_heads": t["KV"], "pad_token_id": None, "rms_norm_eps": 1e-06,
            "rope_parameters": {"mrope_section": t["mrope"], "rope_theta": t["theta"], "rope_type": "default"},
            "sliding_window": None, "tie_word_embeddings": case["tied"], "use_cache": True, "use_sliding_window": False,
            "vocab_size": V}
    vision = {"depth": v["depth"], "fullatt_block_indexes": v["full"], "hidden_act": "silu", "hidden_size": v["d"],
              "in_channels": 3, "initializer_range": 0.02, "intermediate_size": v["d_ff"], "model_type": "qwen2_5_vl",
              "num_heads": v["H"], "out_hidden_size": t["d"], "patch_size": v["patch_size"],
              "spatial_merge_size": v["merge"], "temporal_patch_size": v["temporal"], "tokens_per_second": 4,
              "window_size": v["window"]}
    return dict({"_name_or_path": case.get("name_or_path"), "architectures": ["Qwen2_5_VLForConditionalGeneration"],
                 "dtype": torch_dtype(case), "model_type": "qwen2_5_vl", "text_config": text,
                 "tie_word_embeddings": case["tied"], "transformers_version": "5.17.0", "vision_config": vision}, **ids)


def qwen2_5_vl_preprocessor(case):
    """preprocessor_config.json: Qwen2VLImageProcessor's as save_pretrained writes it (min_pixels and
    max_pixels at the top and as size's shortest_edge and longest_edge, resample 3, the do_ flags,
    rescale_factor), or (layout "legacy") as the Hub's Qwen2.5-VL-*-Instruct files have it: only
    min_pixels, max_pixels, the patch sizes, mean and std, the types; at the case's sizes."""
    v = QWEN_VISION
    prep = {"image_mean": CLIP_MEAN, "image_processor_type": "Qwen2VLImageProcessor", "image_std": CLIP_STD,
            "max_pixels": case["max_pixels"], "merge_size": v["merge"], "min_pixels": case["min_pixels"],
            "patch_size": v["patch_size"], "processor_class": "Qwen2_5_VLProcessor", "temporal_patch_size": v["temporal"]}
    if case["layout"] != "legacy":
        prep.update({"do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True, "resample": 3,
                     "rescale_factor": RESCALE,
                     "size": {"longest_edge": case["max_pixels"], "shortest_edge": case["min_pixels"]}})
    return dict(sorted(prep.items()))


def qwen2_5_vl_tower_weights(w, v):
    """Qwen2_5_VisionTransformerPretrainedModel's tensors in state_dict order under w's prefix
    (patch_embed.proj.weight [d, C, t, p, p] without bias; blocks.{i}. norm1, norm2, attn.qkv,
    attn.proj, mlp.gate_proj, up_proj, down_proj, all Linear with biases; merger.ln_q,
    merger.mlp.0 [s²d, s²d], merger.mlp.2 [out, s²d]), v the filled vision config; make_models'
    scales (nn.Linear 1.2/√in, the RMSNorms 1 ± 0.1)."""
    d, C, t, p = v["hidden_size"], v["in_channels"], v["temporal_patch_size"], v["patch_size"]
    merged = d * v["spatial_merge_size"] ** 2
    w.normal("patch_embed.proj.weight", (d, C, t, p, p), 1.2 / math.sqrt(C * t * p * p))
    for i in range(v["depth"]):
        b = f"blocks.{i}."
        w.normal(b + "norm1.weight", (d,), 0.1, mean=1.0)
        w.normal(b + "norm2.weight", (d,), 0.1, mean=1.0)
        w.linear(b + "attn.qkv", d, 3 * d)
        w.linear(b + "attn.proj", d, d)
        w.linear(b + "mlp.gate_proj", d, v["intermediate_size"])
        w.linear(b + "mlp.up_proj", d, v["intermediate_size"])
        w.linear(b + "mlp.down_proj", v["intermediate_size"], d)
    w.normal("merger.ln_q.weight", (d,), 0.1, mean=1.0)
    w.linear("merger.mlp.0", merged, merged)
    w.linear("merger.mlp.2", merged, v["out_hidden_size"])


def qwen2_5_vl_weights(case, cfg):
    """Qwen2_5_VLForConditionalGeneration's tensors under the case's layout's prefixes
    (QWEN_PREFIXES): the tower (qwen2_5_vl_tower_weights), then the Qwen2 text model (make_models'
    llama_weights of the text config, q/k/v biases, its own seed), "lm_head.weight" unless tied.
    -> (RandomWeights of the file's tensors, W for reference.qwen2_5_vl_forward: Qwen2_5_VLModel's
    names, "visual.…", "language_model.…", "lm_head.weight")"""
    prefixes = QWEN_PREFIXES[case["layout"]]
    w = RandomWeights(case["seed"], case["dtype"], prefixes["visual."])
    qwen2_5_vl_tower_weights(w, reference.qwen2_5_vl_vision_config(cfg))
    W = {"visual." + n: x for n, x in w.W.items()}
    text = llama_weights(dict(seed=case["seed"] + 100, dtype=case["dtype"], prefix=True, bias=("qkv",)),
                         reference.qwen2_5_vl_text_config(cfg))
    for name, dtype, shape, raw in text.tensors:  # "model.…" -> the layout's language model prefix; lm_head as it is
        w.tensors.append((prefixes["language_model."] + name[len("model."):] if name.startswith("model.") else name,
                          dtype, shape, raw))
    W.update({("language_model." + n if n != "lm_head.weight" else n): x for n, x in text.W.items()})
    assert ("lm_head.weight" in W) == (not case["tied"])
    return w, W


def qwen2_5_vl_prompt(text, tokens):
    """processing_qwen2_5_vl.py's prompt: the text's <|image_pad|> (put first as
    <|vision_start|><|image_pad|><|vision_end|> when the text has none: attnviz's rule) repeated
    to the picture's count of merged tokens (image_grid_thw.prod() // merge_size²)."""
    if QWEN_PAD not in text:
        text = QWEN_START + QWEN_PAD + QWEN_END + text
    assert text.count(QWEN_PAD) == 1, text
    return text.replace(QWEN_PAD, QWEN_PAD * tokens)


def natural_qwen2_5_vl_tower(W, v, pixel_values):
    """The tower without transformers' permutation, to check reference.qwen2_5_vl_vision_forward:
    the patches in the picture's row order (torch's conv3d over the picture repeated in time),
    patch (r, c) rotated by r in its pairs' first half of frequencies and c in the second, each
    layer's attention over the whole sequence masked to pairs in the same window (r // wp, c // wp),
    wp = window_size / patch_size, or none in fullatt_block_indexes' layers; the merger on each
    s x s block of the grid, row-major. -> attention [L, H, P, P], hidden [P, d], features."""
    d, H, p, s, t = v["hidden_size"], v["num_heads"], v["patch_size"], v["spatial_merge_size"], v["temporal_patch_size"]
    hd = d // H
    values = torch.as_tensor(pixel_values, dtype=torch.float64)
    volume = values[:, None].expand(-1, t, -1, -1)[None]  # [1, C, t, H, W]
    x = torch.nn.functional.conv3d(volume, W["patch_embed.proj.weight"], stride=(t, p, p))  # [1, d, 1, R, K]
    R, K = x.shape[3], x.shape[4]
    x = x.flatten(2).transpose(1, 2)[0]  # [R·K, d], row-major
    r, c = torch.arange(R).repeat_interleave(K), torch.arange(K).repeat(R)
    inv = 1.0 / 10000.0 ** (torch.arange(0, hd // 2, 2, dtype=torch.float64) / (hd // 2))
    angles = torch.cat([r[:, None] * inv, c[:, None] * inv], dim=-1)  # [N, hd/2]
    cos, sin = torch.cat([angles, angles], -1).cos(), torch.cat([angles, angles], -1).sin()
    wp = v["window_size"] // p
    window = (r // wp) * K + c // wp
    same = window[:, None] == window[None, :]
    act = reference.ACTIVATIONS[v["hidden_act"]]
    maps = []
    for i in range(v["depth"]):
        b = f"blocks.{i}."
        a = reference.rms_norm(x, W[b + "norm1.weight"], 1e-6)
        q, k, val = (y.reshape(R * K, H, hd).transpose(0, 1) for y in reference.linear(a, W, b + "attn.qkv").chunk(3, dim=-1))
        q, k = (y * cos + torch.cat([-y[..., hd // 2:], y[..., :hd // 2]], -1) * sin for y in (q, k))
        scores = q @ k.transpose(1, 2) / math.sqrt(hd)
        if i not in v["fullatt_block_indexes"]:
            scores = scores.masked_fill(~same, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        maps.append(probs)
        x = x + reference.linear((probs @ val).transpose(0, 1).reshape(R * K, d), W, b + "attn.proj")
        m = reference.rms_norm(x, W[b + "norm2.weight"], 1e-6)
        x = x + reference.linear(act(reference.linear(m, W, b + "mlp.gate_proj")) * reference.linear(m, W, b + "mlp.up_proj"),
                                 W, b + "mlp.down_proj")
    n = reference.rms_norm(x, W["merger.ln_q.weight"], 1e-6)
    blocks = n.reshape(R // s, s, K // s, s, d).permute(0, 2, 1, 3, 4).reshape(R * K // (s * s), s * s * d)
    features = reference.linear(reference.gelu_erf(reference.linear(blocks, W, "merger.mlp.0")), W, "merger.mlp.2")
    return {"attention": torch.stack(maps), "hidden": x, "features": features}


def check_qwen2_5_vl_tower(W, v, pixel_values, what):
    """reference.qwen2_5_vl_vision_forward (transformers' window permutation, put back) against
    natural_qwen2_5_vl_tower: the maps, the last hidden state and the merged rows within 1e-12."""
    got, want = reference.qwen2_5_vl_vision_forward(W, v, pixel_values), natural_qwen2_5_vl_tower(W, v, pixel_values)
    for key in ("attention", "hidden", "features"):
        err = float((got[key] - want[key]).abs().max())
        assert got[key].shape == want[key].shape and err < 1e-12, f"{what}: the tower's {key} differs by {err}"


def check_qwen2_5_vl_windows():
    """check_qwen2_5_vl_tower on random towers and pictures: windows of 2 merged tokens a side on
    grids the windows divide, cut short at the bottom, at the right, smaller than one window; of 1
    (every merged token its own window) and of 3; full-attention layers first, in the middle, none."""
    rng = np.random.default_rng(9)
    for window, full, grids in ((16, [1], ((10, 12), (8, 12), (8, 8), (6, 14), (2, 2))), (8, [0, 2], ((6, 8),)),
                                (24, [], ((10, 12), (12, 6)))):
        v = dict(reference.QWEN2_5_VL_VISION_DEFAULTS, depth=3, hidden_size=16, num_heads=2, intermediate_size=24,
                 patch_size=4, window_size=window, fullatt_block_indexes=full, out_hidden_size=12)
        w = RandomWeights(int(rng.integers(1 << 30)), "F32", "")
        qwen2_5_vl_tower_weights(w, v)
        for rows, cols in grids:
            pixel_values = rng.standard_normal((3, rows * 4, cols * 4)).astype(np.float32)
            check_qwen2_5_vl_tower(w.W, v, pixel_values, f"window {window}, {rows} x {cols} patches")


def check_qwen2_5_vl_positions():
    """reference.qwen2_5_vl_rope_index against the rule written out (text: one position each, all
    three streams; the picture's token k at (next, next + k // cols, next + k % cols), then next +=
    max(rows, cols)) for a picture first, mid-text, last, alone; reference.mrope_rotate against a
    rotation written pair by pair (frequency j's stream from the sections' running sum), and
    against reference.rotate where the three streams are equal."""
    img = 7
    for ids, rows, cols in (([5, img, img, img, img, img, img, 6, 1, 2], 2, 3), ([1, 5, img, img, img, img, 6], 1, 4),
                            ([1, 2, 5] + [img] * 12 + [6], 4, 3), ([img] * 4, 2, 2)):
        want, next_ = [[], [], []], 0
        j = 0
        while j < len(ids):
            if ids[j] != img:
                for stream in want:
                    stream.append(next_)
                next_, j = next_ + 1, j + 1
                continue
            for k in range(rows * cols):
                want[0].append(next_), want[1].append(next_ + k // cols), want[2].append(next_ + k % cols)
            next_, j = next_ + max(rows, cols), j + rows * cols
        assert reference.qwen2_5_vl_rope_index(ids, img, rows, cols).tolist() == want, f"rope index of {ids}"
    rng = np.random.default_rng(10)
    for hd, section in ((8, [2, 1, 1]), (16, [2, 3, 3]), (12, [1, 1, 4])):
        x = torch.tensor(rng.standard_normal((3, 5, hd)))
        inv = 1.0 / 1e6 ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        pos = torch.tensor(rng.integers(0, 40, (3, 5)))
        stream = [next(s for s in range(3) if j < sum(section[:s + 1])) for j in range(hd // 2)]
        want = x.clone()
        for t in range(5):
            for j in range(hd // 2):
                a = float(pos[stream[j], t]) * float(inv[j])
                x1, x2 = x[:, t, j], x[:, t, j + hd // 2]
                want[:, t, j], want[:, t, j + hd // 2] = x1 * math.cos(a) - x2 * math.sin(a), x2 * math.cos(a) + x1 * math.sin(a)
        got = reference.mrope_rotate(x, inv, 1.0, pos, section)
        assert float((got - want).abs().max()) < 1e-12, f"mrope_rotate, heads of {hd}, {section}"
        same = reference.mrope_rotate(x, inv, 1.0, torch.arange(5).expand(3, 5), section)
        assert float((same - reference.rotate(x, inv, 1.0)).abs().max()) < 1e-12, "text positions are not plain RoPE"


def make_qwen2_5_vl_case(out, case, vocab, merges, added):
    V = max(added.values()) + 1
    cfg = qwen2_5_vl_config(case, V, added)
    weights, W = qwen2_5_vl_weights(case, cfg)
    folder = case_folder(out, case, dict(cfg), weights)
    write_vlm_tokenizer(folder, vocab, merges, added, bos_token=None)
    prep = qwen2_5_vl_preprocessor(case)
    write_json(os.path.join(folder, "preprocessor_config.json"), prep, indent=2)
    picture(case).save(os.path.join(folder, "image.png"))
    pixel_values = qwen2_vl_process(Image.open(os.path.join(folder, "image.png")), prep)  # float32 [3, H, W]
    assert pixel_values.shape[1:] == case["resized"][::-1], f"resized to {pixel_values.shape[1:]}"
    vcfg = reference.qwen2_5_vl_vision_config(cfg)
    p, s = vcfg["patch_size"], vcfg["spatial_merge_size"]
    rows, cols = pixel_values.shape[1] // p, pixel_values.shape[2] // p
    tokens = rows * cols // (s * s)
    prompt = qwen2_5_vl_prompt(case["text"], tokens)
    ids = vlm_encode(vocab, merges, added, prompt, bos_token=None)
    names = {i: t for t, i in vocab.items()} | {i: t for t, i in added.items()}
    image_tokens = [j for j, i in enumerate(ids) if i == added[QWEN_PAD]]
    assert len(image_tokens) == tokens and image_tokens == list(range(image_tokens[0], image_tokens[0] + tokens)) and max(ids) < V
    run = reference.qwen2_5_vl_forward(W, cfg, ids, pixel_values)
    check_qwen2_5_vl_tower({n[len("visual."):]: x for n, x in W.items() if n.startswith("visual.")}, vcfg, pixel_values,
                           case["case"])
    inputs = {"image": "image.png", "text": case["text"], "prompt": prompt, "ids": ids,
              "tokens": [names[i] for i in ids], "image_tokens": image_tokens, "tiles": {"rows": 0, "cols": 0},
              "patches": {"rows": rows, "cols": cols, "size": p, "first": 0},
              "sizes": {"picture": list(case["picture"]), "resized": list(pixel_values.shape[1:]), "encoder": None},
              "pixel_values": pixel_values[None].tolist()}
    expected_json(folder, case, cfg["model_type"], inputs, run)
    return case["case"]

# [SECTION] The cases: the picture, the patches, the reference run ----------------------------------

# family -> (the case's (config.json, the tower's config, RandomWeights, preprocessor config), the
# reference forward, the tower's tensor names of (patch weight, patch bias or None), [CLS] first)
FAMILIES = {
    "vit": (vit_case, reference.vit_forward,
            ("embeddings.patch_embeddings.projection.weight", "embeddings.patch_embeddings.projection.bias"), True),
    "clip": (clip_case, reference.clip_vision_forward, ("embeddings.patch_embedding.weight", None), True),
    "siglip": (siglip_case, reference.siglip_vision_forward,
               ("embeddings.patch_embedding.weight", "embeddings.patch_embedding.bias"), False),
    "dinov2": (dinov2_case, reference.dinov2_forward,
               ("embeddings.patch_embeddings.projection.weight", "embeddings.patch_embeddings.projection.bias"), True),
}


def picture(case):
    """An RGB picture of the case's size (width, height): gradients, a disc, seeded noise."""
    width, height = case["picture"]
    rng = np.random.default_rng(case["seed"] + 1000)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    disc = ((x - 0.6 * width) ** 2 + (y - 0.4 * height) ** 2 < (0.3 * min(width, height)) ** 2) * 90.0
    rgb = np.stack([255 * x / (width - 1), 255 * y / (height - 1), 60 + disc + 60 * np.sin(x / 3.0)], -1)
    rgb = rgb + rng.normal(0, 25, rgb.shape)
    return Image.fromarray(np.clip(np.rint(rgb), 0, 255).astype(np.uint8), "RGB")


def check_patches(W, cfg, names, pixel_values):
    """The reference's patch projection (a product) against torch's Conv2d, and its row order."""
    weight, bias = W[names[0]], W[names[1]] if names[1] else None
    values = torch.as_tensor(pixel_values, dtype=torch.float64)[None]
    conv = torch.nn.functional.conv2d(values, weight, bias, stride=cfg["patch_size"])
    conv = conv.flatten(2).transpose(1, 2)[0]  # [N, d]
    ours = reference.conv_patches(pixel_values, weight, bias)
    assert float((conv - ours).abs().max()) < 1e-12, "the patch projection is not the Conv2d's"


def make_case(out, case):
    make, forward, patch_names, cls = FAMILIES[case["family"]]
    cfg, tower, weights, prep = make(case)
    folder = case_folder(out, case, dict(cfg), weights)
    write_json(os.path.join(folder, "preprocessor_config.json"), prep, indent=2)
    picture(case).save(os.path.join(folder, "image.png"))
    pixel_values = process(Image.open(os.path.join(folder, "image.png")), prep)  # float32 [3, H, W]
    check_patches(weights.W, tower, patch_names, pixel_values)
    run = forward(weights.W, tower, pixel_values)
    # The picture's grid (the model's own, but for DINOv2's, whose positions follow the picture)
    p, registers = tower["patch_size"], tower.get("num_register_tokens", 0)
    rows, cols = pixel_values.shape[1] // p, pixel_values.shape[2] // p
    inputs = {"image": "image.png", "pixel_values": pixel_values.tolist(),
              "tokens": ["[CLS]"] * cls + [f"reg{r}" for r in range(registers)] + [f"p{r},{c}" for r in range(rows) for c in range(cols)],
              "patches": {"rows": rows, "cols": cols, "size": p, "first": int(cls) + registers}}
    expected_json(folder, case, cfg["model_type"], inputs, run)
    return case["case"]


def main(out):
    os.makedirs(out, exist_ok=True)
    cases = [make_case(out, case) for case in CASES]
    check_pixel_shuffle()
    with open("/usr/share/common-licenses/GPL-3", encoding="utf-8") as f:
        vocab, merges, added = vlm_tokenizer(f.read())
    cases += [make_vlm_case(out, case, vocab, merges, added) for case in VLM_CASES]
    check_gemma3_masks()
    check_gemma3_projector()
    gemma3_added = added_ids(vocab, GEMMA3_ADDED)
    cases += [make_gemma3_case(out, case, vocab, merges, gemma3_added) for case in GEMMA3_CASES]
    check_qwen2_5_vl_windows()
    check_qwen2_5_vl_positions()
    cases += [make_qwen2_5_vl_case(out, case, vocab, merges, qwen_added(vocab)) for case in QWEN_CASES]
    write_json(os.path.join(out, "cases.json"), cases, indent=2)  # written last: the build's stamp


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
