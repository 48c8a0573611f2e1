// model.cpp: see model.hpp.
#include "model.hpp"
#include "text.hpp"
#include "gguf.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <tuple>

namespace attn {

// [SECTION] A loaded model -------------------------------------------------------------------

namespace {

std::string millions(double n) {
    char s[32];
    if (n >= 1e6) std::snprintf(s, sizeof s, "%.0f M", n / 1e6);
    else std::snprintf(s, sizeof s, "%.0f k", n / 1e3);
    return s;
}

// tokenizer_config.json's WordPiece options (absent file or fields: BERT's defaults).
WordPieceOptions wordpiece_options(const ModelFiles& files) {
    WordPieceOptions o;
    const FileBytes* f = files.find("tokenizer_config.json");
    if (!f) return o;
    const std::string shown = files.shown("tokenizer_config.json");
    nlohmann::json j = nlohmann::json::parse(f->text(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw ModelError(shown, "", "not a JSON object");
    auto flag = [&](const char* key, bool& out) {
        auto it = j.find(key);
        if (it == j.end() || it->is_null()) return false;
        if (!it->is_boolean()) throw ModelError(shown, key, "expected true or false");
        out = it->get<bool>();
        return true;
    };
    flag("do_lower_case", o.lower_case);
    if (!flag("strip_accents", o.strip_accents)) o.strip_accents = o.lower_case;
    flag("tokenize_chinese_chars", o.chinese_chars);
    if (auto it = j.find("unk_token"); it != j.end() && it->is_string()) o.unk = it->get<std::string>();
    return o;
}

}  // namespace

namespace {

// What a rotary family's attention adds, for the summary: "RoPE θ 1e+06 (llama3 ×8) · window 4096
// on 14 of 28 layers · q/k norm · soft caps 50 / 30".
std::string features(const ModelConfig& c) {
    if (c.positions != Positions::Rotary) return "";
    char buf[96];
    std::snprintf(buf, sizeof buf, " · RoPE θ %g", c.rope.theta);
    std::string s = buf;
    if (c.rope.type != Rope::Type::Default) {
        std::snprintf(buf, sizeof buf, " (%s ×%g)", rope_type_name(c.rope.type), c.rope.factor);
        s += c.rope.type == Rope::Type::LongRope ? std::string(" (longrope)") : std::string(buf);
    }
    if (c.rope.dim < c.d_head()) s += " on " + std::to_string(c.rope.dim) + " of " + std::to_string(c.d_head()) + " dims";
    if (const int unrotated = static_cast<int>(std::count(c.no_rope.begin(), c.no_rope.end(), 1)); unrotated > 0)
        s += " · no RoPE on " + std::to_string(unrotated) + " of " + std::to_string(c.n_layers) + " layers";
    int sliding = 0, window = 0;
    for (int w : c.window) sliding += w > 0, window = std::max(window, w);
    if (sliding > 0) {
        s += " · window " + std::to_string(window);
        if (sliding < c.n_layers) s += " on " + std::to_string(sliding) + " of " + std::to_string(c.n_layers) + " layers";
    }
    if (c.local_rope.dim > 0 && sliding > 0) {
        std::snprintf(buf, sizeof buf, " (local θ %g)", c.local_rope.theta);
        s += buf;
    }
    if (c.qk_norm) s += " · q/k norm";
    if (c.sinks) s += " · sinks";
    if (c.experts.n > 0) {
        const int layers = static_cast<int>(std::count(c.experts.layers.begin(), c.experts.layers.end(), 1));
        s += " · " + std::to_string(c.experts.n) + " experts, top " + std::to_string(c.experts.top_k);
        if (layers < c.n_layers) s += " on " + std::to_string(layers) + " of " + std::to_string(c.n_layers) + " layers";
    }
    if (c.attn_softcap > 0 || c.final_softcap > 0) {
        std::snprintf(buf, sizeof buf, " · soft caps %g / %g", c.attn_softcap, c.final_softcap);
        s += buf;
    }
    return s;
}

}  // namespace

std::string LoadedModel::summary(int text_tokens) const {
    const int T = text_tokens > 0 ? text_tokens : 128;
    const ModelConfig& c = config();
    std::string s = name;
    s += " · ";
    if (c.decoder_only() && c.family != Family::Gpt2) s += c.model_type + " · ";
    if (c.encoder_decoder()) s += std::to_string(c.n_layers) + " + " + std::to_string(c.decoder_layers);
    else s += std::to_string(c.n_layers);
    s += " layers × " + std::to_string(c.n_heads);
    if (c.encoder_decoder() && c.decoder_heads != c.n_heads) (s += "/") += std::to_string(c.decoder_heads);
    s += " heads";
    if (c.kv_heads() != c.n_heads) s += " (" + std::to_string(c.kv_heads()) + " KV)";
    s += features(c);
    s += " · " + millions(static_cast<double>(model.parameters())) + " parameters";
    if (c.positions == Positions::Rotary) s += " · " + model.checkpoint_text();
    if (vision) {  // a vision-language model's tower
        const ModelConfig& v = vision->config;
        s += " · vision tower " + std::to_string(v.n_layers) + " layers × " + std::to_string(v.n_heads) + " heads, " +
             millions(static_cast<double>(vision->parameters())) + " parameters, " +
             (v.picture_grid() ? "the picture's own size in " + std::to_string(v.patch_size) + " px patches" : std::to_string(v.image_size) + " px views");
    }
    s += " · weights ";
    s += byte_size(static_cast<double>(model.weight_bytes() + (vision ? vision->weight_bytes() : 0))) + " · activations ";
    s += byte_size(static_cast<double>(model.activation_bytes(T, T <= kMapsKeptUpTo))) + " at T = " + std::to_string(T);
    if (T > kMapsKeptUpTo) s += " (maps on demand)";
    if (c.past_training(text_tokens)) s += " · past the " + std::to_string(c.max_positions) + " positions it was trained on";
    return s;
}

std::vector<std::string> vision_tokens(const ModelConfig& c) {
    std::vector<std::string> names;
    if (c.class_token) names.push_back("[CLS]");
    for (int r = 0; r < c.registers; ++r) names.push_back("reg" + std::to_string(r));
    for (int r = 0; r < c.name_grid(); ++r)
        for (int col = 0; col < c.name_grid(); ++col) {
            std::string name = "p";  // appended, not operator+: GCC 12 warns of a false overflow there
            name.append(std::to_string(r)).append(",").append(std::to_string(col));
            names.push_back(std::move(name));
        }
    return names;
}

Tokenizer load_tokenizer(const ModelFiles& files, const ModelConfig& config, bool target) {
    if (config.vision()) {  // no text: a token is a position ([CLS], then the patches), named as vision_tokens
        nlohmann::json vocab = nlohmann::json::object();
        const std::vector<std::string> names = vision_tokens(config);
        for (std::size_t i = 0; i < names.size(); ++i) vocab[names[i]] = i;
        const nlohmann::json j = {{"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", names.front()}}}};
        return read_tokenizer_json(j.dump(), files.shown("config.json") + " (its patches)");
    }
    if (const FileBytes* f = files.find("tokenizer.json")) return read_tokenizer_json(f->text(), files.shown("tokenizer.json"));
    if (const std::string g = files.gguf(); !g.empty())
        return read_tokenizer_json(gguf_tokenizer_json(read_gguf(files.need(g), files.shown(g))), files.shown(g) + " (its tokenizer)");
    switch (config.family) {
    case Family::Gpt2:
        return read_bpe(files.need("vocab.json").text(), files.shown("vocab.json"), files.need("merges.txt").text(),
                        files.shown("merges.txt"));
    case Family::Bert:
        return read_wordpiece(files.need("vocab.txt").text(), files.shown("vocab.txt"), wordpiece_options(files));
    case Family::Marian: {
        const std::string spm = target && files.find("target.spm") ? "target.spm" : "source.spm";
        return read_sentencepiece(files.need(spm).text(), files.shown(spm), files.need("vocab.json").text(),
                                  files.shown("vocab.json"));
    }
    default:  // the Llama-like families ship tokenizer.json
        files.need("tokenizer.json");
    }
    throw ModelError(files.shown("config.json"), "model_type", "no tokenizer for this family");
}

namespace {
ModelConfig config_of(const ModelFiles& files) {
    if (const std::string g = files.gguf(); !g.empty()) {
        const FileBytes& f = files.need(g);
        return gguf_model(read_gguf(f, files.shown(g)), f).config;
    }
    return read_config(files.need("config.json").text(), files.shown("config.json"));
}
}  // namespace

ModelLoad::ModelLoad(const ModelFiles& files, bool measure_heads)
    : folder_(files.folder),
      label_(files.label),
      config_(config_of(files)),
      tokenizer_(load_tokenizer(files, config_, false)),
      target_(config_.family == Family::Marian && files.find("target.spm") && !files.find("tokenizer.json")
                  ? std::optional<Tokenizer>(load_tokenizer(files, config_, true))
                  : std::nullopt),
      weights_(config_, files) {
    if (config_.vision_language()) vision_weights_.emplace(*config_.vision_tower, files);
    if (measure_heads && !config_.encoder_decoder() && !config_.vision())  // a vision-language model's: on its text alone
        probe_ = model_head_probe(config_, tokenizer_, folder_);
    if (const FileBytes* f = config_.vision() || config_.vision_language() ? files.find("preprocessor_config.json") : nullptr)
        processor_ = read_image_processor(f->text(), files.shown("preprocessor_config.json"));
    if (config_.decoder_only()) {
        try {
            chat_ = chat_format(files);
        } catch (const ModelError& e) {
            chat_problem_ = e.what();
        }
    }
}

bool ModelLoad::done() const { return weights_.done() && (!vision_weights_ || vision_weights_->done()) && (!probe_ || heads_); }

float ModelLoad::progress() const {
    // the weights (a vision-language model's: the language model's, then the tower's), then the probe
    const float weights = vision_weights_ ? 0.5f * (weights_.progress() + vision_weights_->progress()) : weights_.progress();
    if (!probe_) return weights;
    return 0.9f * weights + 0.1f * (heads_ ? 1.0f : probe_run_ ? probe_run_->progress() : 0.0f);
}

void ModelLoad::step() {
    if (!weights_.done()) {
        weights_.step();
    } else if (vision_weights_ && !vision_weights_->done()) {
        vision_weights_->step();
    } else if (probe_ && !heads_) {  // the probe: a forward in steps, then its scores
        if (!probe_run_) {
            model_ = weights_.take();
            probe_run_ = std::make_unique<Forward>(*model_, RunInput{probe_->ids, {}});
            return;
        }
        probe_run_->step(ctx_);
        if (probe_run_->done()) heads_ = head_scores(*probe_, probe_run_->take().stacks.front());
    }
}

LoadedModel ModelLoad::take() {
    std::string name = config_.name.empty() ? label_ : config_.name;
    if (name.empty()) {
        name = folder_.substr(folder_.find_last_of('/') == std::string::npos ? 0 : folder_.find_last_of('/') + 1);
        if (name.empty()) name = config_.model_type;
    }
    return LoadedModel{name, folder_, model_ ? std::move(*model_) : weights_.take(), std::move(tokenizer_), std::move(target_),
                       std::move(heads_), std::move(processor_), vision_weights_ ? std::optional<Model>(vision_weights_->take()) : std::nullopt,
                       std::move(chat_), std::move(chat_problem_)};
}

LoadedModel load_model(const ModelFiles& files, bool measure_heads) {
    ModelLoad load(files, measure_heads);
    while (!load.done()) load.step();
    return load.take();
}

// [SECTION] Text and ids ---------------------------------------------------------------------

namespace {

std::string config_file(const LoadedModel& m) { return m.folder.empty() ? "config.json" : m.folder + "/config.json"; }


void check_length(const LoadedModel& m, size_t n, const std::string& what) {
    const ModelConfig& c = m.config();
    const char* field = c.family == Family::Gpt2 ? "n_positions" : "max_position_embeddings";
    if (n > static_cast<size_t>(c.position_limit()))
        throw ModelError(config_file(m), field, what + " has " + std::to_string(n) + " tokens, more than the model's " +
                                                    std::to_string(c.position_limit()) + " positions");
    if (n == 0) throw ModelError(config_file(m), "", what + " is empty: the model needs at least one token");
}

}  // namespace

std::vector<int> with_model_specials(const ModelConfig& c, const Tokenizer& t, std::vector<int> ids, const std::string& folder) {
    auto special = [&](const char* token) {
        if (std::optional<int> id = t.id(token)) return *id;
        throw ModelError(folder, "tokenizer", std::string("has no ") + token + " token");
    };
    switch (c.family) {
    case Family::Gpt2: break;
    case Family::Bert:
        ids.insert(ids.begin(), special("[CLS]"));
        ids.push_back(special("[SEP]"));
        break;
    case Family::Marian: ids.push_back(c.eos_id); break;
    default:  // the Llama-like: what tokenizer.json's post-processor adds (Llama's, Gemma's BOS; Qwen's nothing)
        if (c.decoder_only()) ids = t.with_specials(std::move(ids));
        break;
    }
    return ids;
}

std::optional<HeadProbe> model_head_probe(const ModelConfig& c, const Tokenizer& t, const std::string& folder) {
    return head_probe(t, c, [&](std::vector<int> ids) { return with_model_specials(c, t, std::move(ids), folder); });
}

namespace {
std::vector<int> checked_text_ids(const LoadedModel& m, const std::string& text, const std::vector<int>& ids) {
    if (ids.empty())  // the tokenizer's doing, not config.json's
        throw ModelError(m.folder.empty() ? "the tokenizer" : m.folder + " (its tokenizer)", "",
                         text.empty() ? "the text is empty: type at least one token"
                                      : "the text \"" + text.substr(0, 40) + (text.size() > 40 ? "…" : "") +
                                            "\" produced no tokens (the tokenizer keeps none of its characters)");
    check_length(m, ids.size(), m.config().encoder_decoder() ? "the source text" : "the text");
    check_ids(m, ids, "the tokenizer's ids");
    return ids;
}
}  // namespace

std::vector<int> encode_text(const LoadedModel& m, const std::string& text) {
    return checked_text_ids(m, text, with_model_specials(m.config(), m.tokenizer, m.tokenizer.encode(text), m.folder));
}

std::vector<int> encode_prompt(const LoadedModel& m, const std::string& text) {
    return checked_text_ids(m, text, m.tokenizer.encode(text));
}

namespace {

std::string processor_file(const LoadedModel& m) { return m.folder.empty() ? "preprocessor_config.json" : m.folder + "/preprocessor_config.json"; }

// image_input for the model `c` (a vision model, or a vision-language model's tower).
RunInput patches_input(const LoadedModel& m, const ModelConfig& c, const PixelValues& px) {
    const std::string processor = processor_file(m);
    const int p = c.patch_size, ch = c.channels, named = c.name_grid(), frames = c.temporal_patch;
    // The patch grid: the picture's (the convolution drops a remainder of pixels), where the
    // positions follow it; else the config's image_size exactly.
    const int rows = px.height / p, cols = px.width / p;
    if (!c.picture_grid() && (px.width != c.image_size || px.height != c.image_size))
        throw ModelError(processor, "size",
                         "gives " + std::to_string(px.width) + " × " + std::to_string(px.height) + " pixels; the model reads " +
                             std::to_string(c.image_size) + " × " + std::to_string(c.image_size) + " (config.json's image_size)");
    if (rows < 1 || cols < 1 || rows > named || cols > named)
        throw ModelError(processor, "size",
                         "gives " + std::to_string(px.width) + " × " + std::to_string(px.height) + " pixels: " + std::to_string(rows) + " × " +
                             std::to_string(cols) + " patches of " + std::to_string(p) + "; attnviz reads 1 to " + std::to_string(named) + " a side" +
                             (m.processor && m.processor->max_pixels > 0 ? " (a narrower picture, or a lower max_pixels here, makes fewer)" : ""));
    if (ch != 3) throw ModelError(config_file(m), "num_channels", std::to_string(ch) + ": pictures have 3 (RGB)");
    RunInput in;
    in.patch_rows = rows;
    in.patches.resize(rows * cols, ch * frames * p * p);  // qwen2_5_vl's tower: the picture as `frames` equal frames
    for (int r = 0; r < rows; ++r)
        for (int col = 0; col < cols; ++col)
            for (int k = 0; k < ch; ++k)
                for (int f = 0; f < frames; ++f)
                    for (int y = 0; y < p; ++y)
                        for (int x = 0; x < p; ++x)
                            in.patches(r * cols + col, ((k * frames + f) * p + y) * p + x) = px.at(k, r * p + y, col * p + x);
    if (c.positions == Positions::Rotary) {  // the rotation's positions: each patch's row and column
        in.positions.assign(2, {});
        for (int r = 0; r < rows; ++r)
            for (int col = 0; col < cols; ++col) in.positions[0].push_back(r), in.positions[1].push_back(col);
    }
    // ids name the tokens (vision_tokens): the [CLS], the registers, then patch (r, col) of the
    // name grid's rows
    const int first = (c.class_token ? 1 : 0) + c.registers;
    in.ids.resize(static_cast<std::size_t>(first));
    std::iota(in.ids.begin(), in.ids.end(), 0);
    for (int r = 0; r < rows; ++r)
        for (int col = 0; col < cols; ++col) in.ids.push_back(first + r * named + col);
    return in;
}

}  // namespace

RunInput image_input(const LoadedModel& m, const PixelValues& px) {
    const ModelConfig& c = m.config();
    if (!c.vision()) throw ModelError(config_file(m), "model_type", c.model_type + " reads text, not pictures: give --text");
    return patches_input(m, c, px);
}

namespace {

// qwen2_5_vl: the picture's own grid (smart_resize's), in whole merged blocks; the processor's
// patches must be the tower's.
PictureInput merged_layout(const LoadedModel& m, const Image& picture) {
    const ModelConfig& c = m.config();
    const ModelConfig& tower = *c.vision_tower;
    const ImageProcessor& p = *m.processor;
    for (const auto& [field, got, want] : {std::tuple{"patch_size", p.patch_size, tower.patch_size},
                                           std::tuple{"merge_size", p.merge_size, c.scale_factor},
                                           std::tuple{"temporal_patch_size", p.temporal_patch_size, tower.temporal_patch}})
        if (got != want)
            throw ModelError(processor_file(m), field, std::to_string(got) + (p.factor > 0 ? "" : " (not Qwen2-VL's processor)") +
                                                       ": the model's vision_config says " + std::to_string(want));
    const int longer = std::max(picture.width, picture.height), shorter = std::max(std::min(picture.width, picture.height), 1);
    if (longer > 200 * shorter)
        throw ModelError(processor_file(m), "", "the picture is " + std::to_string(picture.width) + " × " + std::to_string(picture.height) +
                                                    ": Qwen2-VL's processor refuses an aspect ratio above 200");
    const auto [w, h] = p.resized_size(picture.width, picture.height);
    PictureInput out;
    out.grid_rows = h / tower.patch_size, out.grid_cols = w / tower.patch_size;
    return out;
}

}  // namespace

PictureInput picture_layout(const LoadedModel& m, const Image& picture) {
    const ModelConfig& c = m.config();
    if (!c.vision_language() || !m.vision) throw ModelError(config_file(m), "model_type", c.model_type + " reads no pictures with its text");
    if (!m.processor) throw ModelError(processor_file(m), "", "missing: how the picture is resized and cut");
    const ImageProcessor& p = *m.processor;
    if (c.connector == ModelConfig::Connector::Merge) return merged_layout(m, picture);
    PictureInput out;
    out.grid_rows = out.grid_cols = c.vision_tower->patch_grid();
    const int side = c.vision_tower->image_size;
    const std::string tower_side = std::to_string(side) + " (config.json's vision_config.image_size)";
    if (p.tile == 0) {  // gemma3: the picture resized to the tower's square, one view
        if (p.width != side || p.height != side || p.shortest_edge > 0 || p.crop)
            throw ModelError(processor_file(m), "size", std::to_string(p.width) + " × " + std::to_string(p.height) + " pixels; the vision tower reads " + tower_side);
        return out;
    }
    if (p.tile != side) throw ModelError(processor_file(m), "max_image_size", std::to_string(p.tile) + " pixels a view; the vision tower reads " + tower_side);
    const ViewSizes v = view_sizes(p, picture.width, picture.height);
    out.rows = v.rows, out.cols = v.cols;
    return out;
}

PictureInput picture_input(const LoadedModel& m, const Image& picture) {
    PictureInput out = picture_layout(m, picture);
    const ModelConfig& c = m.config();
    const ImageProcessor& p = *m.processor;
    if (p.tile > 0) out.pictures = picture_views(p, picture);
    else out.pictures.views = {sized_picture(p, picture)};
    out.rows = out.pictures.rows, out.cols = out.pictures.cols;
    for (const Image& v : out.pictures.views) {
        RunInput in = patches_input(m, *c.vision_tower, pixel_values(p, v));
        in.keep_maps = static_cast<int>(in.ids.size()) <= kMapsKeptUpTo;
        out.views.push_back(std::move(in));
    }
    return out;
}

namespace {

// A token the picture's expansion writes; `field`: config.json's field that gives its id (`id`), or none.
struct PictureToken {
    std::string token;
    const char* field = nullptr;
    int id = -1;
};
// Each must be the tokenizer's own (one id), the id config.json gives where it gives one.
void check_picture_tokens(const LoadedModel& m, const std::vector<PictureToken>& tokens) {
    const std::string tokenizer = m.folder.empty() ? "tokenizer.json" : m.folder + "/tokenizer.json";
    for (const PictureToken& t : tokens) {
        const std::optional<int> id = m.tokenizer.id(t.token);
        if (!id) throw ModelError(tokenizer, "added_tokens", "has no " + t.token + " token: the picture's tokens are written with it");
        if (t.field && *id != t.id)
            throw ModelError(config_file(m), t.field, std::to_string(t.id) + ", but the tokenizer's " + t.token + " is " + std::to_string(*id));
    }
}

// gemma3 (processing_gemma3.py; the strings are its tokenizer's boi_token, image_token,
// eoi_token): the text's <start_of_image> (one; none: the picture goes first) becomes
// "\n\n<start_of_image>", mm_tokens_per_image <image_soft_token>, "<end_of_image>\n\n".
std::string gemma3_prompt(const LoadedModel& m, const std::string& text, const std::string& field) {
    const std::string boi = "<start_of_image>", eoi = "<end_of_image>", image = "<image_soft_token>";
    const ModelConfig& c = m.config();
    check_picture_tokens(m, {{boi, "boi_token_index", c.boi_token_id}, {eoi, "eoi_token_index", c.eoi_token_id},
                             {image, "image_token_index", c.image_token_id}});
    const std::size_t at = text.find(boi);
    if (at != std::string::npos && text.find(boi, at + boi.size()) != std::string::npos)
        throw ModelError(m.folder, field, "names " + boi + " more than once: attnviz runs one picture");
    std::string seq = "\n\n" + boi;
    for (int i = 0; i < c.image_seq_len(); ++i) seq += image;
    seq += eoi + "\n\n";
    return at == std::string::npos ? seq + text : text.substr(0, at) + seq + text.substr(at + boi.size());
}

// qwen2_5_vl (processing_qwen2_5_vl.py): the text's <|image_pad|> (one; none: the picture goes
// first, as "<|vision_start|><|image_pad|><|vision_end|>") becomes the picture's count of them.
std::string qwen_prompt(const LoadedModel& m, const std::string& text, int tokens, const std::string& field) {
    const std::string start = "<|vision_start|>", pad = "<|image_pad|>", end = "<|vision_end|>";
    const ModelConfig& c = m.config();
    check_picture_tokens(m, {{start, "vision_start_token_id", c.boi_token_id}, {end, "vision_end_token_id", c.eoi_token_id},
                             {pad, "image_token_id", c.image_token_id}});
    const std::size_t at = text.find(pad);
    if (at != std::string::npos && text.find(pad, at + pad.size()) != std::string::npos)
        throw ModelError(m.folder, field, "names " + pad + " more than once: attnviz runs one picture");
    std::string pads;
    for (int i = 0; i < tokens; ++i) pads += pad;
    return at == std::string::npos ? start + pads + end + text : text.substr(0, at) + pads + text.substr(at + pad.size());
}

}  // namespace

int picture_tokens(const LoadedModel& m, const PictureInput& picture) {
    const ModelConfig& c = m.config();
    if (c.connector != ModelConfig::Connector::Merge) return c.image_seq_len();
    return (picture.grid_rows / c.scale_factor) * (picture.grid_cols / c.scale_factor);
}

PositionStreams picture_positions(const LoadedModel& m, const std::vector<int>& ids, const PictureInput& picture) {
    const ModelConfig& c = m.config();
    if (c.connector != ModelConfig::Connector::Merge) return {};
    const int cols = picture.grid_cols / c.scale_factor;
    PositionStreams p(3);
    int next = 0;  // the next text token's position
    for (std::size_t t = 0; t < ids.size();) {
        if (ids[t] != c.image_token_id) {
            for (std::vector<int>& s : p) s.push_back(next);
            ++next, ++t;
            continue;
        }
        // the picture's run: token k at time 0, row k / cols, column k % cols, each from `next`;
        // the text goes on past the largest
        std::size_t end = t;
        while (end < ids.size() && ids[end] == c.image_token_id) ++end;
        const int count = static_cast<int>(end - t), rows = (count + cols - 1) / cols;
        for (int k = 0; k < count; ++k) p[0].push_back(next), p[1].push_back(next + k / cols), p[2].push_back(next + k % cols);
        next += std::max(rows, std::min(count, cols));
        t = end;
    }
    return p;
}

std::string picture_prompt(const LoadedModel& m, const std::string& text, const PictureInput& picture, const std::string& field) {
    if (m.config().family == Family::Gemma3Vlm) return gemma3_prompt(m, text, field);
    if (m.config().connector == ModelConfig::Connector::Merge) return qwen_prompt(m, text, picture_tokens(m, picture), field);
    const std::string image = "<image>", around = "<fake_token_around_image>", global = "<global-img>";
    const std::size_t at = text.find(image);
    if (at != std::string::npos && text.find(image, at + image.size()) != std::string::npos)
        throw ModelError(m.folder, field, "names <image> more than once: attnviz runs one picture");
    std::string seq;
    for (int i = 0; i < m.config().image_seq_len(); ++i) seq += image;
    std::string views;
    for (int r = 1; r <= picture.rows; ++r) {
        for (int c = 1; c <= picture.cols; ++c) views += around + "<row_" + std::to_string(r) + "_col_" + std::to_string(c) + ">" + seq;
        views += "\n";
    }
    views += (picture.rows > 0 ? "\n" : "") + around + global + seq + around;
    std::vector<PictureToken> needed = {{image, "image_token_id", m.config().image_token_id}, {around}, {global}};
    if (picture.rows > 0) needed.push_back({"<row_1_col_1>"});
    check_picture_tokens(m, needed);
    return at == std::string::npos ? views + text : text.substr(0, at) + views + text.substr(at + image.size());
}

Matrix picture_rows(kernels::Context& ctx, const LoadedModel& m, const std::vector<Matrix>& views, int rows) {
    const ModelConfig& c = m.config();
    const int s = c.scale_factor, dv = c.vision_tower->d_model;
    const int R = rows > 0 ? rows : c.vision_tower->patch_grid(), C = views.empty() || R == 0 ? R : static_cast<int>(views[0].rows()) / R;
    const int gr = R / s, gc = C / s, n = gr * gc;
    const bool mean = c.connector == ModelConfig::Connector::MeanPool;
    Matrix merged = Matrix::Zero(static_cast<Eigen::Index>(views.size()) * n, mean ? dv : s * s * dv);
    for (std::size_t v = 0; v < views.size(); ++v) {
        const Matrix& h = views[v];  // (R·C)×d_v
        if (h.rows() != static_cast<Eigen::Index>(R) * C || R % s != 0 || C % s != 0)
            throw ModelError("", "image_rows", "a view of " + std::to_string(h.rows()) + " patches is not " + std::to_string(R) + " × " +
                                                   std::to_string(C) + " in blocks of " + std::to_string(s));
        for (int i = 0; i < gr; ++i)
            for (int j = 0; j < gc; ++j) {
                auto row = merged.row(static_cast<Eigen::Index>(v) * n + i * gc + j);
                for (int a = 0; a < s; ++a)
                    for (int b = 0; b < s; ++b) {
                        const auto patch = h.row((s * i + a) * C + s * j + b);
                        if (mean) row += patch;
                        else row.segment((a * s + b) * dv, dv) = patch;
                    }
                if (mean) row /= static_cast<float>(s * s);
            }
    }
    return connector_rows(ctx, m.model, merged);
}

std::vector<int> encode_target(const LoadedModel& m, const std::string& text) {
    std::vector<int> ids = m.decoder_tokenizer().encode(text);
    ids.insert(ids.begin(), m.config().decoder_start_id);
    check_length(m, ids.size(), "the target text");
    check_ids(m, ids, "the tokenizer's ids");
    return ids;
}

void check_ids(const LoadedModel& m, const std::vector<int>& ids, const std::string& field) {
    check_length(m, ids.size(), field);
    const int vocab = m.config().vocab_size;
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= vocab)
            throw ModelError(config_file(m), "vocab_size", field + "[" + std::to_string(i) + "] is " + std::to_string(ids[i]) +
                                                            ", outside the vocabulary (0 to " + std::to_string(vocab - 1) + ")");
}

// [SECTION] Running it -----------------------------------------------------------------------

namespace {
// The vocabulary's string for an id, or "<ID>" past the tokenizer's end (a model whose
// vocab_size exceeds its tokenizer's, as GPT-2's padded vocabularies do).
std::string token_or_id(const Tokenizer& t, int id) {
    if (id < t.size()) return t.token(id);
    std::string s = "<";
    s += std::to_string(id);
    s += '>';
    return s;
}

std::vector<std::string> tokens_of(const Tokenizer& t, const std::vector<int>& ids) {
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (int id : ids) out.push_back(token_or_id(t, id));
    return out;
}
}  // namespace

ImportedAttention run_attention(const LoadedModel& m, const RunInput& input, const RunResult& run) {
    const bool encdec = m.config().encoder_decoder();
    const std::vector<std::string> source = tokens_of(m.tokenizer, encdec ? input.source_ids : input.ids);
    const std::vector<std::string> target = encdec ? tokens_of(m.decoder_tokenizer(), input.ids) : source;
    ImportedAttention out;
    out.model = m.name;
    for (const StackRun& s : run.stacks) {
        AttentionStack stack;
        stack.name = s.name;
        const bool on_decoder = encdec && s.name != "encoder_attention";
        stack.queries = on_decoder ? target : source;
        stack.keys = s.cross ? source : stack.queries;
        stack.layers = static_cast<int>(s.layers.size());
        stack.heads = s.heads;
        for (const BlockRun& b : s.layers) stack.maps.insert(stack.maps.end(), b.weights.begin(), b.weights.end());
        stack.sinks = m.config().sinks && !s.cross;
        out.stacks.push_back(std::move(stack));
    }
    return out;
}

std::vector<NextToken> top_tokens(const LoadedModel& m, const std::vector<float>& logits, int n) {
    if (logits.empty() || n <= 0) return {};
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
    std::vector<int> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t k = std::min(order.size(), static_cast<size_t>(n));
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    const Tokenizer& t = m.decoder_tokenizer();
    const std::vector<std::string>& labels = m.config().labels;  // a vision model's classes
    std::vector<NextToken> out;
    for (size_t i = 0; i < k; ++i) {
        const int id = order[i];
        out.push_back({id, m.config().vision() ? labels[static_cast<std::size_t>(id)] : token_or_id(t, id),
                       static_cast<float>(std::exp(static_cast<double>(logits[id]) - max) / sum)});
    }
    return out;
}

// [SECTION] Experiments: SPEC.md §5's options --------------------------------------------------

namespace {

// The comma-separated items of `text` (none when it is empty).
std::vector<std::string_view> items(std::string_view text) {
    std::vector<std::string_view> out;
    for (std::size_t i = 0; !text.empty() && i <= text.size();) {
        const std::size_t comma = std::min(text.find(',', i), text.size());
        out.push_back(text.substr(i, comma - i));
        i = comma + 1;
    }
    return out;
}

std::optional<int> from_one(std::string_view s) {
    int v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v < 1) return std::nullopt;
    return v;
}

}  // namespace

std::optional<std::vector<HeadItem>> parse_head_items(std::string_view text) {
    std::vector<HeadItem> out;
    for (std::string_view item : items(text)) {
        constexpr auto npos = std::string_view::npos;
        const std::size_t last = item.rfind(':');
        const std::string_view front = last == npos ? "" : item.substr(0, last);  // [STACK:]LAYER
        const std::size_t mid = front.rfind(':');
        const auto layer = from_one(mid == npos ? front : front.substr(mid + 1));
        const auto head = last == npos ? std::nullopt : from_one(item.substr(last + 1));
        if (!layer || !head || mid == 0) return std::nullopt;
        out.push_back({std::string(mid == npos ? "" : front.substr(0, mid)), *layer, *head});
    }
    return out;
}

std::vector<HeadRef> parse_heads(const LoadedModel& m, std::string_view text, const std::string& field) {
    const std::optional<std::vector<HeadItem>> parsed = parse_head_items(text);
    if (!parsed)
        throw ModelError("", field, "expected LAYER:HEAD counted from 1 (2:3), or STACK:LAYER:HEAD, comma-separated, got \"" +
                                        std::string(text) + "\"");
    const std::vector<StackShape> stacks = stack_shapes(m.config());
    std::vector<HeadRef> out;
    for (const HeadItem& item : *parsed) {
        const std::string shown = (item.stack.empty() ? "" : item.stack + ":") + std::to_string(item.layer) + ":" + std::to_string(item.head);
        const std::string& name = item.stack.empty() ? stacks.front().name : item.stack;
        auto it = std::find_if(stacks.begin(), stacks.end(), [&](const StackShape& s) { return s.name == name; });
        if (it == stacks.end()) {
            std::string names;
            for (const StackShape& s : stacks) names += (names.empty() ? "" : ", ") + s.name;
            throw ModelError("", field, "\"" + shown + "\": this model's stacks are " + names);
        }
        if (item.layer > it->layers || item.head > it->heads)
            throw ModelError("", field, "\"" + shown + "\" is not in " + it->name + ", which has " +
                                            std::to_string(it->layers) + " layers × " + std::to_string(it->heads) + " heads");
        const HeadRef ref{static_cast<int>(it - stacks.begin()), item.layer - 1, item.head - 1};
        if (std::find(out.begin(), out.end(), ref) == out.end()) out.push_back(ref);
    }
    return out;
}

std::string format_heads(const LoadedModel& m, const std::vector<HeadRef>& heads) {
    const std::vector<StackShape> stacks = stack_shapes(m.config());
    std::string s;
    for (const HeadRef& h : heads) {
        if (!s.empty()) s += ',';
        if (h.stack != 0) s += stacks[static_cast<std::size_t>(h.stack)].name + ":";
        s += std::to_string(h.layer + 1) + ":" + std::to_string(h.head + 1);
    }
    return s;
}

std::vector<int> parse_positions(std::string_view text, const std::string& field) {
    std::vector<int> out;
    for (std::string_view item : items(text)) {
        const auto v = from_one(item);
        if (!v) throw ModelError("", field, "expected token positions counted from 1, separated by commas (3,5), got \"" + std::string(item) + "\"");
        if (std::find(out.begin(), out.end(), *v - 1) == out.end()) out.push_back(*v - 1);
    }
    return out;
}

std::size_t kept_bytes(const RunResult& run) {
    std::size_t n = 0;
    for (const StackRun& s : run.stacks)
        for (const BlockRun& b : s.layers) {
            n += b.kept.bytes() + static_cast<std::size_t>(b.x.size()) * sizeof(float);
            for (const Matrix& w : b.weights) n += static_cast<std::size_t>(w.size()) * sizeof(float);
        }
    return n;
}

void check_run_memory(const LoadedModel& m, const RunInput& input, std::uint64_t available, const std::string& field) {
    const int T = static_cast<int>(std::max(input.ids.size(), input.source_ids.size()));
    const std::uint64_t need = m.model.activation_bytes(T, input.keep_maps);
    if (available >= m.model.weight_bytes() && need <= available - m.model.weight_bytes()) return;
    throw ModelError(m.folder, field,
                     std::to_string(T) + " tokens need " + byte_size(static_cast<double>(need)) + " beside the weights (" +
                         byte_size(static_cast<double>(m.model.weight_bytes())) + ")" +
                         (input.keep_maps ? " with every map kept" : " with the maps on demand") + ", more than the " +
                         byte_size(static_cast<double>(available)) + " there are: a shorter text fits");
}

void check_interventions(const LoadedModel& m, const RunInput& input, const std::string& field) {
    const bool marian = m.config().encoder_decoder();
    const std::size_t n = marian ? input.source_ids.size() : input.ids.size();
    for (int j : input.edits.hidden)
        if (j < 0 || static_cast<std::size_t>(j) >= n)
            throw ModelError("", field, "token " + std::to_string(j + 1) + " is past the " + (marian ? "source's " : "text's ") +
                                            std::to_string(n) + " tokens");
}

// [SECTION] Head importance -------------------------------------------------------------------

double log_probability(const std::vector<float>& logits, int id) {
    const float top = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float v : logits) sum += std::exp(static_cast<double>(v) - top);
    return static_cast<double>(logits[static_cast<std::size_t>(id)]) - top - std::log(sum);
}

HeadImportanceRun::HeadImportanceRun(const Model& m, RunInput input, const std::vector<float>& logits)
    : model_(m), input_(std::move(input)) {
    if (logits.empty()) throw ModelError("", "", m.config.model_type + " has no LM head: no next token to measure heads by");
    const StackShape first = stack_shapes(m.config).front();
    out_.token = static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out_.layers = first.layers, out_.heads = first.heads;
    out_.delta.assign(static_cast<std::size_t>(first.layers * first.heads), std::numeric_limits<float>::quiet_NaN());
    base_ = log_probability(logits, out_.token);
    skip_knocked();
}

HeadImportanceRun::~HeadImportanceRun() = default;
bool HeadImportanceRun::done() const { return next_ >= out_.layers * out_.heads; }
float HeadImportanceRun::progress() const {
    const float inner = run_ ? run_->progress() : 0.0f;
    return std::min(1.0f, (static_cast<float>(next_) + inner) / static_cast<float>(std::max(out_.layers * out_.heads, 1)));
}

// Past the heads the run already knocks out (they stay NaN).
void HeadImportanceRun::skip_knocked() {
    while (!done() && input_.edits.knocked_out(0, next_ / out_.heads, next_ % out_.heads)) ++next_;
}

void HeadImportanceRun::step(kernels::Context& ctx) {
    if (done()) return;
    if (!run_) {
        RunInput in = input_;
        in.edits.knockout.push_back({0, next_ / out_.heads, next_ % out_.heads});
        run_ = std::make_unique<Forward>(model_, std::move(in));
    }
    run_->step(ctx);
    if (!run_->done()) return;
    const RunResult r = run_->take();
    out_.delta[static_cast<std::size_t>(next_)] = static_cast<float>(log_probability(r.logits, out_.token) - base_);
    run_.reset();
    ++next_;
    skip_knocked();
}

HeadImportance HeadImportanceRun::take() { return std::move(out_); }

}  // namespace attn
