// import.cpp: reading attention exported from a real model (SPEC.md §3, BertViz exports),
// aggregating it over heads and layers, rollout, and subword tokens merged into words.
//
// [SECTION] Errors and JSON
// [SECTION] Reading one stack
// [SECTION] Reading a file
// [SECTION] Aggregation
// [SECTION] Subword tokens
#include "import.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace attn {

using nlohmann::json;

namespace {

// [SECTION] Errors and JSON ------------------------------------------------------------------

// Softmax rows from a model: every entry in [-kTolerance, 1 + kTolerance] and each row sums to
// 1 ± kTolerance, or to 0 ± kTolerance when the row is fully masked. 1e-2 admits fp16 / bf16
// exports (bf16 keeps 8 bits: a 4096-entry row can drift by ~4e-3) and numbers rounded to 4
// decimals, and still catches logits, log-probabilities or transposed maps.
constexpr double kTolerance = 1e-2;

std::string at(const std::string& field, size_t i) { return field + "[" + std::to_string(i) + "]"; }

const char* type_name(const json& j) {
    switch (j.type()) {
        case json::value_t::null: return "null";
        case json::value_t::object: return "an object";
        case json::value_t::array: return "an array";
        case json::value_t::string: return "a string";
        case json::value_t::boolean: return "a boolean";
        case json::value_t::discarded: return "nothing";
        default: return "a number";
    }
}

[[noreturn]] void expected(const std::string& field, const std::string& what, const json& got) {
    std::string g = type_name(got);
    if (got.is_string()) {
        std::string text = got.get<std::string>();
        if (text.size() > 40) text = text.substr(0, 40) + "…";
        g = "\"" + text + "\"";
    } else if (got.is_number()) {
        g = got.dump();
    } else if (got.is_array()) {
        g = "an array of " + std::to_string(got.size());
    }
    throw SceneError(field, "expected " + what + ", got " + g);
}

// "line:column" of a byte offset into text (1-based; columns count bytes).
std::string line_column(std::string_view text, size_t byte) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < byte && i < text.size(); ++i) {
        if (text[i] == '\n') ++line, column = 1;
        else ++column;
    }
    return std::to_string(line) + ":" + std::to_string(column);
}

json parse(std::string_view text) {
    try {
        return json::parse(text.begin(), text.end());
    } catch (const json::parse_error& e) {
        // nlohmann's message: "[json.exception.parse_error.101] parse error at line L, column C: ..."
        size_t at_byte = e.byte == 0 ? 0 : e.byte - 1;
        // Python's json.dump writes NaN and Infinity for non-finite floats: not JSON. nlohmann
        // stops on the letter after the literal's first one, so look a little back.
        for (const std::string_view literal : {"NaN", "Infinity"}) {
            const size_t from = at_byte >= 2 ? at_byte - 2 : 0;
            size_t found = text.substr(from, 3 + literal.size()).find(literal);
            if (found != std::string_view::npos && from + found <= at_byte) {
                found += from;
                if (found > 0 && text[found - 1] == '-') --found;
                throw SceneError(line_column(text, found),
                                 "malformed JSON: " + std::string(literal) +
                                     " is not a JSON number (the model gave a non-finite attention weight)");
            }
        }
        std::string message = e.what();
        size_t colon = message.find(": ", message.find("column"));
        std::string detail = colon == std::string::npos ? message : message.substr(colon + 2);
        throw SceneError(line_column(text, at_byte), "malformed JSON: " + detail);
    } catch (const json::out_of_range& e) {
        // A number too large for a double (1e999): nlohmann names the literal but not where.
        std::string message = e.what();
        size_t open = message.find('\''), close = message.rfind('\'');
        std::string literal = open < close ? message.substr(open + 1, close - open - 1) : "";
        size_t found = literal.empty() ? std::string_view::npos : text.find(literal);
        throw SceneError(found == std::string_view::npos ? "(number)" : line_column(text, found),
                         "malformed JSON: number overflow parsing '" + literal + "'");
    }
}

std::vector<std::string> read_tokens(const std::string& field, const json& j) {
    if (!j.is_array() || j.empty()) expected(field, "a non-empty array of token strings", j);
    if (j.size() > static_cast<size_t>(kMaxImportTokens))
        throw SceneError(field, "expected at most " + std::to_string(kMaxImportTokens) + " tokens, got " +
                                    std::to_string(j.size()));
    std::vector<std::string> tokens;
    tokens.reserve(j.size());
    for (size_t i = 0; i < j.size(); ++i) {
        if (!j[i].is_string()) expected(at(field, i), "a string", j[i]);
        tokens.push_back(j[i].get<std::string>());
    }
    return tokens;
}

// [SECTION] Reading one stack ----------------------------------------------------------------

struct StackSpec {
    std::string name;          // the stack's SPEC §3 name
    std::string field;         // where its array is ("attention", "attention[1].attn")
    const char* query_role;    // "token", "decoder token": names rows in errors
    const char* key_role;
};

// Reads [layer][head][query][key], or [layer][1][head][query][key] (Hugging Face's batch of
// one), into stack. `budget` is what is left of kMaxImportValues across all stacks.
void read_stack(const json& j, const StackSpec& spec, AttentionStack& stack, long long& budget) {
    const std::string& field = spec.field;
    const size_t T_q = stack.queries.size(), T_k = stack.keys.size();
    if (!j.is_array() || j.empty()) expected(field, "a non-empty array of layers [layer][head][query][key]", j);
    if (j.size() > static_cast<size_t>(kMaxImportLayers))
        throw SceneError(field, "expected at most " + std::to_string(kMaxImportLayers) + " layers, got " +
                                    std::to_string(j.size()));
    const size_t layers = j.size();
    stack.name = spec.name;
    stack.layers = static_cast<int>(layers);
    stack.heads = 0;
    stack.maps.clear();

    for (size_t l = 0; l < layers; ++l) {
        std::string layer_field = at(field, l);
        const json* layer = &j[l];
        if (!layer->is_array() || layer->empty()) expected(layer_field, "a non-empty array of heads", *layer);
        // A batch dimension: [1][head][q][k]. Told apart from [head][q][k] by depth.
        const json& probe = (*layer)[0];
        const bool batched = probe.is_array() && !probe.empty() && probe[0].is_array() && !probe[0].empty() &&
                             probe[0][0].is_array();
        if (batched) {
            if (layer->size() != 1)
                throw SceneError(layer_field, "expected a batch of one sequence [1][head][query][key], got a batch of " +
                                                  std::to_string(layer->size()));
            layer = &(*layer)[0];
            layer_field = at(layer_field, 0);
            if (!layer->is_array() || layer->empty()) expected(layer_field, "a non-empty array of heads", *layer);
        }
        const size_t heads = layer->size();
        if (l == 0) {
            if (heads > static_cast<size_t>(kMaxImportHeads))
                throw SceneError(layer_field, "expected at most " + std::to_string(kMaxImportHeads) +
                                                  " heads, got " + std::to_string(heads));
            const long long values = static_cast<long long>(layers) * static_cast<long long>(heads) *
                                     static_cast<long long>(T_q) * static_cast<long long>(T_k);
            if (values > budget)
                throw SceneError(field, std::to_string(layers) + " layers × " + std::to_string(heads) + " heads × " +
                                            std::to_string(T_q) + "×" + std::to_string(T_k) +
                                            " is more than the " + std::to_string(kMaxImportValues) +
                                            " numbers an import may hold in all");
            budget -= values;
            stack.heads = static_cast<int>(heads);
            stack.maps.reserve(layers * heads);
        } else if (heads != static_cast<size_t>(stack.heads)) {
            throw SceneError(layer_field, "expected " + std::to_string(stack.heads) + " heads like layer 0, got " +
                                              std::to_string(heads));
        }
        for (size_t h = 0; h < heads; ++h) {
            const std::string head_field = at(layer_field, h);
            const json& head = (*layer)[h];
            if (!head.is_array())
                expected(head_field, "an array of " + std::to_string(T_q) + " rows (one per " + spec.query_role + ")", head);
            if (head.size() != T_q)
                throw SceneError(head_field, "expected " + std::to_string(T_q) + " rows (one per " + spec.query_role +
                                                 "), got " + std::to_string(head.size()));
            Matrix m(static_cast<Eigen::Index>(T_q), static_cast<Eigen::Index>(T_k));
            for (size_t r = 0; r < T_q; ++r) {
                const json& row = head[r];
                if (!row.is_array() || row.size() != T_k) {
                    const std::string what = "an array of " + std::to_string(T_k) + " numbers (one per " +
                                             spec.key_role + ")";
                    if (!row.is_array()) expected(at(head_field, r), what, row);
                    throw SceneError(at(head_field, r), "expected " + std::to_string(T_k) + " numbers (one per " +
                                                            spec.key_role + "), got " + std::to_string(row.size()));
                }
                double sum = 0;
                float* out = m.data() + r * T_k;
                for (size_t c = 0; c < T_k; ++c) {
                    const json& v = row[c];
                    if (!v.is_number()) expected(at(at(head_field, r), c), "a number", v);
                    const double x = v.get<double>();
                    if (!(x >= -kTolerance && x <= 1 + kTolerance))  // also catches NaN
                        throw SceneError(at(at(head_field, r), c),
                                         "expected an attention weight in [0, 1], got " + v.dump());
                    out[c] = static_cast<float>(x);
                    sum += x;
                }
                if (std::fabs(sum - 1) > kTolerance && std::fabs(sum) > kTolerance) {
                    char buffer[32];
                    std::snprintf(buffer, sizeof buffer, "%.6g", sum);
                    throw SceneError(at(head_field, r), std::string("expected a row that sums to 1 (softmax output; ") +
                                                            "0 if fully masked), got a sum of " + buffer);
                }
            }
            stack.maps.push_back(std::move(m));
        }
    }
}

// [SECTION] Reading a file -------------------------------------------------------------------

// Fields of BertViz's model_view / head_view parameters that carry no attention.
constexpr const char* kBertVizFields[] = {"attention", "default_filter", "display_mode", "root_div_id",
                                          "include_layers", "include_heads", "total_heads", "layer", "heads"};
// SPEC §3 fields.
constexpr const char* kSpecFields[] = {"model", "tokens", "attention", "encoder_tokens", "decoder_tokens",
                                       "encoder_attention", "decoder_attention", "cross_attention"};

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && std::string_view(s).substr(s.size() - suffix.size()) == suffix;
}

bool is_one_of(const std::string& key, const auto& list) {
    for (const char* k : list)
        if (key == k) return true;
    return false;
}

ImportedAttention read_bertviz(const json& root) {
    ImportedAttention result;
    const json& list = root["attention"];
    long long budget = kMaxImportValues;
    // BertViz's names, in the order a SPEC §3 file holds them.
    const std::pair<const char*, const char*> kinds[] = {
        {"All", "attention"}, {"Encoder", "encoder_attention"}, {"Decoder", "decoder_attention"}, {"Cross", "cross_attention"}};
    std::vector<std::pair<int, AttentionStack>> found;
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string field = at("attention", i);
        const json& entry = list[i];
        if (!entry.is_object()) expected(field, "an object {\"name\", \"attn\", \"left_text\", \"right_text\"}", entry);
        std::string name = "All";  // a self-attention model without sentence B has name null
        if (entry.contains("name") && !entry["name"].is_null()) {
            if (!entry["name"].is_string()) expected(field + ".name", "a string or null", entry["name"]);
            name = entry["name"].get<std::string>();
        }
        // "Sentence A -> Sentence B" and the like are slices of "All": nothing new.
        if (name.rfind("Sentence ", 0) == 0) continue;
        int kind = -1;
        for (int k = 0; k < 4; ++k)
            if (name == kinds[k].first) kind = k;
        if (kind < 0)
            expected(field + ".name", "\"All\", \"Encoder\", \"Decoder\", \"Cross\" or null (BertViz)", entry["name"]);
        for (const auto& [other, stack] : found)
            if (other == kind) throw SceneError(field + ".name", "\"" + name + "\" appears twice");
        for (const char* key : {"attn", "left_text", "right_text"})
            if (!entry.contains(key)) throw SceneError(field + "." + key, "missing (BertViz entries hold attn, left_text and right_text)");
        AttentionStack stack;
        stack.queries = read_tokens(field + ".left_text", entry["left_text"]);
        stack.keys = read_tokens(field + ".right_text", entry["right_text"]);
        const bool cross = kind == 3;
        if (!cross && stack.queries != stack.keys)
            throw SceneError(field + ".right_text", "expected the same tokens as left_text (self-attention)");
        read_stack(entry["attn"], {kinds[kind].second, field + ".attn", cross ? "decoder token" : "token",
                                   cross ? "encoder token" : "token"},
                   stack, budget);
        found.emplace_back(kind, std::move(stack));
    }
    if (found.empty()) throw SceneError("attention", "expected at least one BertViz entry named \"All\", \"Encoder\", \"Decoder\" or \"Cross\"");
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    if (found.front().first == 0 && found.size() > 1)
        throw SceneError("attention", "expected either self-attention (\"All\") or encoder-decoder entries, not both");
    for (auto& [kind, stack] : found) result.stacks.push_back(std::move(stack));
    return result;
}

}  // namespace

ImportedAttention read_import(std::string_view text) {
    const json root = parse(text);
    if (!root.is_object()) expected("(top level)", "a JSON object (SPEC.md §3)", root);

    // BertViz: "attention" is a list of {name, attn, left_text, right_text} objects.
    if (root.contains("attention") && root["attention"].is_array() && !root["attention"].empty() &&
        root["attention"][0].is_object()) {
        for (const auto& [key, value] : root.items())
            if (!is_one_of(key, kBertVizFields))
                throw SceneError(key, "unknown field in a BertViz export (expected attention, include_layers, "
                                      "include_heads, total_heads, default_filter, display_mode, root_div_id)");
        return read_bertviz(root);
    }

    // SPEC §3. Other fields are metadata an exporter may add ("text", "attention_mask"), but a
    // field named like attention or tokens ("attentions", Hugging Face's name) is a mistake:
    // saying so beats ignoring it.
    for (const auto& [key, value] : root.items())
        if (!is_one_of(key, kSpecFields) && (ends_with(key, "attention") || ends_with(key, "attentions") ||
                                             ends_with(key, "tokens")))
            throw SceneError(key, "unknown field (expected tokens and attention, or encoder_tokens, decoder_tokens, "
                                  "encoder_attention, decoder_attention and cross_attention)");

    ImportedAttention result;
    if (root.contains("model")) {
        if (!root["model"].is_string()) expected("model", "a string", root["model"]);
        result.model = root["model"].get<std::string>();
    }
    const bool single = root.contains("attention");
    const bool encoder_decoder = root.contains("encoder_attention") || root.contains("decoder_attention") ||
                                 root.contains("cross_attention");
    long long budget = kMaxImportValues;
    if (single) {
        for (const char* key : {"encoder_attention", "decoder_attention", "cross_attention", "encoder_tokens", "decoder_tokens"})
            if (root.contains(key))
                throw SceneError(key, "not allowed with \"attention\" (a file holds one model: either tokens and "
                                      "attention, or the encoder-decoder fields)");
        if (!root.contains("tokens")) throw SceneError("tokens", "missing (\"attention\" needs the tokens it is over)");
        AttentionStack stack;
        stack.queries = stack.keys = read_tokens("tokens", root["tokens"]);
        read_stack(root["attention"], {"attention", "attention", "token", "token"}, stack, budget);
        result.stacks.push_back(std::move(stack));
        return result;
    }
    if (!encoder_decoder) {
        std::string keys;
        for (const auto& [key, value] : root.items()) keys += (keys.empty() ? "" : ", ") + key;
        throw SceneError("(top level)", "expected \"tokens\" and \"attention\", or encoder_/decoder_/cross_attention "
                                        "(SPEC.md §3), or a BertViz export; got " +
                                            (keys.empty() ? std::string("an empty object") : "fields " + keys));
    }
    if (root.contains("tokens")) throw SceneError("tokens", "not allowed with encoder-decoder attention (use encoder_tokens and decoder_tokens)");
    std::vector<std::string> encoder, decoder;
    auto tokens = [&](const char* key, const char* needed_by, std::vector<std::string>& out) {
        if (!out.empty()) return;
        if (!root.contains(key)) throw SceneError(key, std::string("missing (") + needed_by + " needs it)");
        out = read_tokens(key, root[key]);
    };
    if (root.contains("encoder_attention")) {
        tokens("encoder_tokens", "encoder_attention", encoder);
        AttentionStack stack;
        stack.queries = stack.keys = encoder;
        read_stack(root["encoder_attention"], {"encoder_attention", "encoder_attention", "encoder token", "encoder token"},
                   stack, budget);
        result.stacks.push_back(std::move(stack));
    }
    if (root.contains("decoder_attention")) {
        tokens("decoder_tokens", "decoder_attention", decoder);
        AttentionStack stack;
        stack.queries = stack.keys = decoder;
        read_stack(root["decoder_attention"], {"decoder_attention", "decoder_attention", "decoder token", "decoder token"},
                   stack, budget);
        result.stacks.push_back(std::move(stack));
    }
    if (root.contains("cross_attention")) {
        tokens("decoder_tokens", "cross_attention", decoder);
        tokens("encoder_tokens", "cross_attention", encoder);
        AttentionStack stack;
        stack.queries = decoder;
        stack.keys = encoder;
        read_stack(root["cross_attention"], {"cross_attention", "cross_attention", "decoder token", "encoder token"},
                   stack, budget);
        result.stacks.push_back(std::move(stack));
    }
    return result;
}

// [SECTION] Aggregation ----------------------------------------------------------------------

namespace {

std::vector<int> chosen(const std::vector<int>& picked, int count, const char* what) {
    if (picked.empty()) {
        std::vector<int> all(static_cast<size_t>(count));
        for (int i = 0; i < count; ++i) all[static_cast<size_t>(i)] = i;
        return all;
    }
    for (int i : picked)
        if (i < 0 || i >= count)
            throw std::out_of_range(std::string(what) + " " + std::to_string(i) + " is not in 0…" +
                                    std::to_string(count - 1));
    return picked;
}

}  // namespace

// result(q, k) = mean or max over the chosen (layer, head) of map(layer, head)(q, k).
Matrix aggregate(const AttentionStack& stack, const std::vector<int>& layers, const std::vector<int>& heads,
                 HeadReduce reduce) {
    const std::vector<int> ls = chosen(layers, stack.layers, "layer"), hs = chosen(heads, stack.heads, "head");
    Matrix result;
    bool first = true;
    for (int l : ls)
        for (int h : hs) {
            const Matrix& m = stack.map(l, h);
            if (first) result = m, first = false;
            else if (reduce == HeadReduce::Mean) result += m;
            else result = result.cwiseMax(m);
        }
    if (reduce == HeadReduce::Mean) result /= static_cast<float>(ls.size() * hs.size());
    return result;
}

// Per layer l: A_l = heads reduced, Ã_l = rows_normalised(0.5·A_l + 0.5·I); R_0 = Ã_0,
// R_l = Ã_l · R_{l-1}. Row i of R_l: how much of token i's representation after layer l
// comes from each input token, following attention and the residual through every layer.
std::vector<Matrix> attention_rollout(const AttentionStack& stack, HeadReduce reduce) {
    if (!stack.is_self() || stack.queries.size() != stack.keys.size())
        throw std::invalid_argument("attention rollout needs self-attention (" + stack.name + " is not)");
    const Eigen::Index T = static_cast<Eigen::Index>(stack.queries.size());
    std::vector<Matrix> rollout;
    rollout.reserve(static_cast<size_t>(stack.layers));
    for (int l = 0; l < stack.layers; ++l) {
        Matrix a = aggregate(stack, {l}, {}, reduce);
        a = 0.5f * a + 0.5f * Matrix::Identity(T, T);
        // Each row sums to 1 after the mean (0.5 for a fully masked row); after the max it
        // may sum to more. Normalising makes every row a distribution again.
        for (Eigen::Index i = 0; i < T; ++i) a.row(i) /= a.row(i).sum();
        rollout.push_back(l == 0 ? a : Matrix(a * rollout.back()));
    }
    return rollout;
}

RowVector summed_attention(const Matrix& map, const std::vector<int>& query_rows) {
    RowVector sum = RowVector::Zero(map.cols());
    for (int r : query_rows) {
        if (r < 0 || r >= map.rows())
            throw std::out_of_range("query row " + std::to_string(r) + " is not in 0…" + std::to_string(map.rows() - 1));
        sum += map.row(r);
    }
    return sum;
}

// [SECTION] Subword tokens -------------------------------------------------------------------

namespace {

constexpr std::string_view kBpeSpace = "\xC4\xA0";    // Ġ U+0120: byte-level BPE space
constexpr std::string_view kBpeNewline = "\xC4\x8A";  // Ċ U+010A: byte-level BPE newline
constexpr std::string_view kBpeTab = "\xC4\x89";      // ĉ U+0109: byte-level BPE tab
constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // ▁ U+2581: SentencePiece space
constexpr std::string_view kNewlineMark = "\xE2\x86\xB5";  // ↵ U+21B5: a newline shown in a label

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// [CLS], [SEP], <s>, </s>, <|endoftext|>, <pad>: a model's own tokens, never part of a word.
bool is_special(const std::string& t) {
    if (t.size() < 3) return false;
    return (t.front() == '[' && t.back() == ']') || (t.front() == '<' && t.back() == '>');
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
    for (size_t i = s.find(from); i != std::string::npos; i = s.find(from, i + to.size())) s.replace(i, from.size(), to);
    return s;
}

}  // namespace

std::string display_token(const std::string& token) {
    if (is_special(token)) return token;
    if (starts_with(token, "##") && token.size() > 2) return token.substr(2);
    std::string s = replace_all(token, kBpeSpace, " ");
    s = replace_all(std::move(s), kSpmSpace, " ");
    s = replace_all(std::move(s), kBpeNewline, kNewlineMark);
    s = replace_all(std::move(s), kBpeTab, "\t");
    return s;
}

std::vector<Word> merge_subwords(const std::vector<std::string>& tokens) {
    // Which convention the tokenizer follows decides what starts a word.
    bool wordpiece = false, space_marked = false;
    for (const std::string& t : tokens) {
        if (is_special(t)) continue;
        wordpiece = wordpiece || (starts_with(t, "##") && t.size() > 2);
        space_marked = space_marked || starts_with(t, kBpeSpace) || starts_with(t, kSpmSpace);
    }
    std::vector<Word> words;
    bool previous_ends_word = true;  // after a special token or a newline, a new word begins
    for (size_t i = 0; i < tokens.size(); ++i) {
        const std::string& t = tokens[i];
        const bool special = is_special(t);
        bool continues = false;
        if (!special && !previous_ends_word && !words.empty()) {
            if (wordpiece) continues = starts_with(t, "##") && t.size() > 2;
            else if (space_marked) continues = !starts_with(t, kBpeSpace) && !starts_with(t, kSpmSpace) &&
                                               !starts_with(t, kBpeNewline);
        }
        std::string text = display_token(t);
        if (continues) {
            words.back().text += text;
            ++words.back().count;
        } else {
            // The leading space is how the tokenizer marks a word start: not part of the word.
            const size_t first = text.find_first_not_of(' ');
            words.push_back({first == std::string::npos ? text : text.substr(first), static_cast<int>(i), 1});
        }
        previous_ends_word = special || t.find(kBpeNewline) != std::string::npos;
    }
    return words;
}

// Rows: mean of the query word's pieces (each piece is one query, the word is their average
// reader). Columns: sum over the key word's pieces (attention to any piece is attention to the
// word). So each row of the result still sums to what the rows summed to.
Matrix merge_attention(const Matrix& map, const std::vector<Word>& query_words, const std::vector<Word>& key_words) {
    auto check = [](const std::vector<Word>& words, Eigen::Index n, const char* side) {
        Eigen::Index next = 0;
        for (const Word& w : words) {
            if (w.first != next || w.count < 1)
                throw std::invalid_argument(std::string(side) + " words must cover the map's " + side +
                                            " in order, without gaps");
            next += w.count;
        }
        if (next != n)
            throw std::invalid_argument(std::string(side) + " words cover " + std::to_string(next) + " tokens, the map has " +
                                        std::to_string(n));
    };
    check(query_words, map.rows(), "query");
    check(key_words, map.cols(), "key");
    // Columns first (T_q × W_k), then rows (W_q × W_k).
    Matrix columns(map.rows(), static_cast<Eigen::Index>(key_words.size()));
    for (size_t k = 0; k < key_words.size(); ++k)
        columns.col(static_cast<Eigen::Index>(k)) = map.middleCols(key_words[k].first, key_words[k].count).rowwise().sum();
    Matrix merged(static_cast<Eigen::Index>(query_words.size()), columns.cols());
    for (size_t q = 0; q < query_words.size(); ++q)
        merged.row(static_cast<Eigen::Index>(q)) =
            columns.middleRows(query_words[q].first, query_words[q].count).colwise().sum() /
            static_cast<float>(query_words[q].count);
    return merged;
}

}  // namespace attn
