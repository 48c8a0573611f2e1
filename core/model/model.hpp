// model.hpp: a model as a user brings it (a folder or its files): configuration, weights and
// tokenizers together, the text-to-ids rules of its family (special tokens), the checks of
// SPEC.md §5, and a run's attention as the import format (§3) that every view reads.
//
// [SECTION] A loaded model
// [SECTION] Text and ids
// [SECTION] Running it
// [SECTION] Experiments: SPEC.md §5's options
// [SECTION] Head importance
#pragma once

#include "chat.hpp"
#include "files.hpp"
#include "heads.hpp"
#include "image.hpp"
#include "import.hpp"
#include "tokenizer.hpp"
#include "transformer.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// [SECTION] A loaded model -------------------------------------------------------------------

struct LoadedModel {
    std::string name;       // config's _name_or_path, else the folder's name
    std::string folder;     // as the user named it (messages)
    Model model;
    Tokenizer tokenizer;                // gpt2, bert: the tokenizer; marian: the source's
    std::optional<Tokenizer> target;    // marian: the target's (target.spm), when separate
    std::optional<HeadScores> heads;    // gpt2, bert: measured on the probe (heads.hpp) when loaded so
    std::optional<ImageProcessor> processor;  // vision models: preprocessor_config.json, when the folder has it
    std::optional<Model> vision;        // vision-language models: the vision tower (config().vision_tower), from the same checkpoint
    // Decoder models: the chat template (chat.hpp), when the files carry one; else what is wrong
    // with the one they carry (the model still runs on text), or "".
    std::optional<ChatFormat> chat;
    std::string chat_problem;

    const ModelConfig& config() const { return model.config; }
    const Tokenizer& decoder_tokenizer() const { return target ? *target : tokenizer; }
    // "gpt2 · 12 layers × 12 heads · 124 M parameters · weights 498 MB · activations 31 MB at T = 128":
    // the activations at T, the text's length (a rotary model past its trained positions says
    // so), or at 128 when no text is given (T ≤ 0).
    std::string summary(int T = 0) const;
};

// The tokenizer files of a model's folder, in SPEC.md §5's order of preference.
Tokenizer load_tokenizer(const ModelFiles& files, const ModelConfig& config, bool target = false);

// Loads config.json, the tokenizer files and model.safetensors in steps (ModelLoader's), so a
// page can draw between them; with `measure_heads`, then runs the head probe (heads.hpp) in
// steps (gpt2, bert). Throws ModelError.
class ModelLoad {
public:
    explicit ModelLoad(const ModelFiles& files, bool measure_heads = false);  // reads config.json and the tokenizers
    const ModelConfig& config() const { return config_; }
    bool done() const;
    float progress() const;  // 0 … 1: the weights, then the probe
    void step();             // nothing while wanted()
    LoadedModel take();
    // A sliced checkpoint's window the weights wait for (ModelLoader's, transformer.hpp).
    const std::optional<FileRange>& wanted() const { return reading().wanted(); }
    std::uint8_t* window() { return reading().window(); }
    void filled() { reading().filled(); }

private:
    // The loader still reading: the language model's, then the tower's.
    ModelLoader& reading() { return weights_.done() && vision_weights_ ? *vision_weights_ : weights_; }
    const ModelLoader& reading() const { return weights_.done() && vision_weights_ ? *vision_weights_ : weights_; }
    std::string folder_, label_;
    ModelConfig config_;
    Tokenizer tokenizer_;
    std::optional<Tokenizer> target_;
    ModelLoader weights_;
    std::optional<ModelLoader> vision_weights_;  // a vision-language model's tower, read after the language model
    std::optional<HeadProbe> probe_;  // still to run
    std::optional<Model> model_;      // the weights, once converted (while the probe runs)
    std::unique_ptr<Forward> probe_run_;
    kernels::Context ctx_;
    std::optional<HeadScores> heads_;
    std::optional<ImageProcessor> processor_;
    std::optional<ChatFormat> chat_;
    std::string chat_problem_;
};
LoadedModel load_model(const ModelFiles& files, bool measure_heads = false);

// [SECTION] Text and ids ---------------------------------------------------------------------

// As Hugging Face tokenizes with its defaults: gpt2 the text's ids; bert [CLS] … [SEP];
// marian's source … </s>; the Llama-like as their tokenizer.json's post-processor says. Throws ModelError when the ids exceed the model's positions.
std::vector<int> encode_text(const LoadedModel& m, const std::string& text);
// A text that writes its own special tokens (a chat template's, chat.hpp): the tokenizer's ids
// alone, as apply_chat_template tokenizes (add_special_tokens off); checked as encode_text's.
std::vector<int> encode_prompt(const LoadedModel& m, const std::string& text);
// The special tokens encode_text puts around a text's `ids` (no checks of length); throws
// ModelError naming `folder` when bert's tokenizer lacks [CLS] or [SEP].
std::vector<int> with_model_specials(const ModelConfig& c, const Tokenizer& t, std::vector<int> ids, const std::string& folder);
// heads.hpp's probe with those special tokens around it (what ModelLoad runs with measure_heads).
std::optional<HeadProbe> model_head_probe(const ModelConfig& c, const Tokenizer& t, const std::string& folder);
// marian's decoder input: decoder_start_id, then the target text's ids (no </s>).
std::vector<int> encode_target(const LoadedModel& m, const std::string& text);
// Checks ids given as they are (--ids): in the vocabulary, within the positions, not empty.
// `field` names them in messages ("--ids").
void check_ids(const LoadedModel& m, const std::vector<int>& ids, const std::string& field);

// A picture's run of a vision model (transformer.hpp's RunInput for vision models): its pixel
// values (process_image's) cut into patches, at the model's image_size (or, dinov2, any grid of
// 1 to name_grid() patches a side). Throws ModelError when the model reads no pictures or the
// size is not one it reads.
RunInput image_input(const LoadedModel& m, const PixelValues& pixels);
// A vision model's token names: "[CLS]", the registers "reg0" …, then "p0,0", "p0,1", … (row,
// column) of name_grid() patches a side, in row order; image_input's ids index them.
std::vector<std::string> vision_tokens(const ModelConfig& c);

// A vision-language model's picture (idefics3, smolvlm): its views as the processor cuts them
// (image.hpp's picture_views: the tiles row by row, then the whole), each as the tower's run.
struct PictureInput {
    std::vector<RunInput> views;
    int rows = 0, cols = 0;  // the tiles (0, 0: the one view)
    int grid_rows = 0, grid_cols = 0;  // a view's patches (qwen2_5_vl: the picture's own grid, smart_resize's)
    PictureViews pictures;   // the views as pictures (what the tower saw)
};
PictureInput picture_input(const LoadedModel& m, const Image& picture);
// Its tiles alone (rows, cols; no views): what picture_prompt needs, from the picture's size.
PictureInput picture_layout(const LoadedModel& m, const Image& picture);
// The text as the processor writes it around the picture: its "<image>" (one; none: the picture
// goes first) becomes, per tile, <fake_token_around_image><row_R_col_C> and image_seq_len
// <image>s ("\n" after each row of tiles), then "\n<fake_token_around_image><global-img>", the
// whole's <image>s and <fake_token_around_image> (without tiles, no "\n" before). Throws
// ModelError naming `field` for a second "<image>", or naming tokenizer.json when it lacks a token.
// qwen2_5_vl: its <|image_pad|> (one; none: "<|vision_start|><|image_pad|><|vision_end|>" goes
// first) becomes picture_tokens' count of them.
std::string picture_prompt(const LoadedModel& m, const std::string& text, const PictureInput& picture, const std::string& field);
// The image tokens of one view: image_seq_len, or qwen2_5_vl's (grid_rows / s)·(grid_cols / s).
int picture_tokens(const LoadedModel& m, const PictureInput& picture);
// qwen2_5_vl's positions of `ids` (RunInput::positions; transformers' get_rope_index): a text
// token at the next position in all three streams; the picture's run of image tokens, token k at
// (time, height, width) = next + (0, k / cols, k % cols) of its (grid_rows / s) × cols merged
// grid; the text after it from its largest + 1. Other models: none (0, 1, …).
PositionStreams picture_positions(const LoadedModel& m, const std::vector<int>& ids, const PictureInput& picture);
// The views' tower outputs (RunResult::hidden, P×d_v each, in order) as RunInput::image_rows:
//   pass 1: each s×s block of the R×C patches (R = `rows`, or the tower's square grid when 0)
//           merged into the view's row (i, j) of (R/s)×(C/s): idefics3's pixel shuffle and
//           qwen2_5_vl's merger, patches (s·i + a, s·j + b) side by side, a then b (s²·d_v
//           wide); gemma3's mean of them (AvgPool2d: summed a then b, over s², d_v wide)
//   pass 2: the connector (connector_rows: gemma3's norm, then rows·projector -> d_model;
//           qwen2_5_vl's norm of each patch, projector, GELU, projector_out)
Matrix picture_rows(kernels::Context& ctx, const LoadedModel& m, const std::vector<Matrix>& views, int rows = 0);

// [SECTION] Running it -----------------------------------------------------------------------

// A run's maps as an import (SPEC.md §3): stacks named as there, tokens from the vocabulary.
ImportedAttention run_attention(const LoadedModel& m, const RunInput& input, const RunResult& run);

// What a run keeps (attention_maps.hpp's Q, K and rows' softmax; the maps and block inputs
// where it kept them), in bytes.
std::size_t kept_bytes(const RunResult& run);
// Before a run: the memory activation_bytes says it needs (every map kept, or on demand, as
// input.keep_maps) fits in `available` bytes beside the weights; else throws ModelError naming
// `field` with the tokens, the bytes needed and those there are.
void check_run_memory(const LoadedModel& m, const RunInput& input, std::uint64_t available, const std::string& field);

struct NextToken {
    int id = 0;
    std::string token;
    float p = 0;
};
// The N likeliest next tokens from the last position's logits (softmax over the vocabulary).
std::vector<NextToken> top_tokens(const LoadedModel& m, const std::vector<float>& logits, int n);

// [SECTION] Experiments: SPEC.md §5's options --------------------------------------------------

// "2:3,1:1" (--knockout, the link's `knockout`): heads with layers and heads counted from 1,
// each optionally after its stack's name ("cross_attention:2:1"; else the model's first stack).
struct HeadItem {
    std::string stack;  // "" = the first
    int layer = 1, head = 1;
};
// The items as written, or nullopt when one is malformed (no model needed: links check this).
std::optional<std::vector<HeadItem>> parse_head_items(std::string_view text);
// The items as this model's heads. Throws ModelError naming `field` for a malformed item, an
// unknown stack or a head the model does not have.
std::vector<HeadRef> parse_heads(const LoadedModel& m, std::string_view text, const std::string& field);
std::string format_heads(const LoadedModel& m, const std::vector<HeadRef>& heads);  // the same form
// "3,5" (--hide-token): token positions counted from 1 -> from 0. Throws ModelError naming `field`.
std::vector<int> parse_positions(std::string_view text, const std::string& field);
// The hidden positions lie within the tokens they hide (gpt2, bert: ids; marian: source_ids).
void check_interventions(const LoadedModel& m, const RunInput& input, const std::string& field);

// [SECTION] Head importance -------------------------------------------------------------------

// Each head of the first stack, for one prediction: the change in the log-probability of the
// run's likeliest next token when that head alone is knocked out as well (the run's ablation
// and other interventions kept). Negative: the head helped that prediction.
struct HeadImportance {
    int token = -1;               // the id measured
    int layers = 0, heads = 0;
    std::vector<float> delta;     // [layer·heads + head]; NaN for a head the run already knocked out
    float at(int layer, int head) const { return delta[static_cast<std::size_t>(layer * heads + head)]; }
};

// One forward per head, in sub-block steps, so a page stays responsive (GPT-2 small: 144).
class HeadImportanceRun {
public:
    // `input`: the run explained; `logits`: its last position's (a model with an LM head).
    HeadImportanceRun(const Model& m, RunInput input, const std::vector<float>& logits);
    ~HeadImportanceRun();
    bool done() const;
    float progress() const;  // 0 … 1
    void step(kernels::Context& ctx);
    HeadImportance take();   // once done()

private:
    Model model_;            // a copy shares the weights
    RunInput input_;
    HeadImportance out_;
    double base_ = 0;        // log p(token) in the run
    int next_ = 0;           // the head being measured, layer·heads + head
    std::unique_ptr<Forward> run_;
    void skip_knocked();
};
// log softmax(logits)[id], in double.
double log_probability(const std::vector<float>& logits, int id);

}  // namespace attn
