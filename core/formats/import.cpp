// import.cpp: reading attention exported from a real model (SPEC.md §3, BertViz exports),
// aggregating it over heads and layers, rollout, and subword tokens merged into words.
//
// [SECTION] Errors and JSON
// [SECTION] Reading one stack
// [SECTION] Reading a file
// [SECTION] Import or scene: the top-level keys
// [SECTION] Aggregation
// [SECTION] Subword tokens
#include "import.hpp"

#include "text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>

namespace attn {

namespace {

// [SECTION] Errors and JSON ------------------------------------------------------------------

// Softmax rows from a model: every entry in [-kTolerance, 1 + kTolerance] and each row sums to
// 1 ± kTolerance, or to 0 ± kTolerance when the row is fully masked. Rounding each weight to
// bf16 (8 significant bits) moves a row's sum by up to 2^-9 ≈ 2e-3, to fp16 by 5e-4, to 4
// decimals by T·5e-5; 1e-2 admits those and still catches logits, log-probabilities or maps
// read the wrong way round.
constexpr double kTolerance = 1e-2;

// Why a JSON reader of our own: an import is mostly numbers (12 layers × 12 heads × 256² is
// 9.4M of them, 120-220 MB of text). nlohmann::json reads about 20 MB/s here (its lexer copies
// each number and calls strtod; a do-nothing SAX handler was no faster): 5.6 s for such a file
// natively, more in wasm. This reader keeps arrays of numbers as flat floats and reads a number
// in one pass over its digits. Strings are few (tokens, names): nlohmann decodes each one,
// escapes and UTF-8 checks included.

// A JSON value. Arrays whose elements are all numbers keep them in `numbers` (numeric = true).
struct Value {
    enum class Type : std::uint8_t { Null, Boolean, Number, String, Array, Object };
    Type type = Type::Null;
    bool boolean = false, numeric = false;
    double number = 0;
    std::string text;               // String
    std::vector<float> numbers;     // numeric Array
    std::vector<Value> items;       // other Array; Object values
    std::vector<std::string> keys;  // Object: keys[i] names items[i]

    bool is_null() const { return type == Type::Null; }
    bool is_number() const { return type == Type::Number; }
    bool is_string() const { return type == Type::String; }
    bool is_array() const { return type == Type::Array; }
    bool is_object() const { return type == Type::Object; }
    size_t size() const { return numeric ? numbers.size() : items.size(); }
    bool empty() const { return size() == 0; }
    // Elements of a non-numeric array (numeric arrays hold no Values: check `numeric` first).
    const Value& operator[](size_t i) const { return items[i]; }
    bool contains(std::string_view key) const { return find(key) != nullptr; }
    const Value& operator[](std::string_view key) const { return *find(key); }
    const Value* find(std::string_view key) const {
        for (size_t i = keys.size(); i-- > 0;)  // the last of repeated keys wins, as in nlohmann
            if (keys[i] == key) return &items[i];
        return nullptr;
    }
};

std::string shown_number(double v) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", v);
    return buffer;
}

std::string describe(const Value& v) {
    switch (v.type) {
        case Value::Type::Null: return "null";
        case Value::Type::Boolean: return v.boolean ? "true" : "false";
        case Value::Type::Number: return shown_number(v.number);
        case Value::Type::String: {
            std::string text = v.text;
            if (text.size() > 40) text = text.substr(0, 40) + "…";
            return "\"" + text + "\"";
        }
        case Value::Type::Array: return "an array of " + std::to_string(v.size());
        case Value::Type::Object: return "an object";
    }
    return "nothing";
}

[[noreturn]] void expected(const std::string& field, const std::string& what, const Value& got) {
    throw SceneError(field, "expected " + what + ", got " + describe(got));
}

std::string at(const std::string& field, size_t i) { return field + "[" + std::to_string(i) + "]"; }

// Before indexing an array whose elements must be strings, arrays or objects: a numeric array
// holds no Values, and is named at its first number.
void require_values(const std::string& field, const Value& array, const std::string& what) {
    if (!array.numeric) return;
    Value first;
    first.type = Value::Type::Number;
    first.number = array.numbers[0];
    expected(at(field, 0), what, first);
}

class Parser {
public:
    explicit Parser(std::string_view text) : text_(text) {}

    Value document() {
        if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a UTF-8 BOM (nlohmann skips it in scenes too)
        skip_space();
        Value v = value(0);
        skip_space();
        if (pos_ != text_.size()) fail(pos_, "unexpected " + shown_char(pos_) + " after the JSON value");
        return v;
    }

private:
    static constexpr int kMaxDepth = 64;  // a file needs 9 (BertViz entry, batch of one); a stack overflow none
    std::string_view text_;
    size_t pos_ = 0;
    size_t row_size_ = 0;  // length of the last array of numbers

    [[noreturn]] void fail(size_t at, const std::string& what) const {
        throw SceneError(line_column(text_, at), "malformed JSON: " + what);
    }
    std::string shown_char(size_t at) const {
        if (at >= text_.size()) return "end of input";
        const unsigned char c = static_cast<unsigned char>(text_[at]);
        if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
        char buffer[16];
        std::snprintf(buffer, sizeof buffer, "byte 0x%02X", c);
        return buffer;
    }
    // '\0' past the end: never a digit or a JSON character, so no check needs the length too.
    char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
    bool at_digit() const { return pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; }
    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t'))
            ++pos_;
    }
    void expect(char c, const char* what) {
        if (peek() != c) fail(pos_, "unexpected " + shown_char(pos_) + "; expected " + what);
        ++pos_;
    }

    Value value(int depth) {
        if (depth > kMaxDepth) fail(pos_, "nested deeper than " + std::to_string(kMaxDepth) + " levels");
        const char c = peek();
        if (pos_ >= text_.size()) fail(pos_, "unexpected end of input; expected a value");
        if (c == '[') return array(depth);
        if (c == '{') return object(depth);
        Value v;
        if (c == '"') {
            v.type = Value::Type::String;
            v.text = string();
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            v.type = Value::Type::Number;
            v.number = number();
        } else if (literal("true")) {
            v.type = Value::Type::Boolean, v.boolean = true;
        } else if (literal("false")) {
            v.type = Value::Type::Boolean;
        } else if (!literal("null")) {
            // Python's json.dump writes NaN and Infinity for non-finite floats: not JSON.
            for (const std::string_view name : {"NaN", "Infinity"})
                if (text_.substr(pos_, name.size()) == name)
                    fail(pos_, std::string(name) + " is not a JSON number (the model gave a non-finite attention weight)");
            fail(pos_, "unexpected " + shown_char(pos_) + "; expected a value");
        }
        return v;
    }

    bool literal(std::string_view word) {
        if (text_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, read as mantissa · 10^exponent.
    double number() {
        const size_t start = pos_;
        const bool negative = peek() == '-';
        if (negative) ++pos_;
        std::uint64_t mantissa = 0;
        int digits = 0, exponent = 0;  // significant digits kept; 10^exponent still to apply
        bool exact = true;             // false: more than 19 significant digits (strtod decides)
        auto digit = [&](char d, bool fraction) {
            if (mantissa == 0 && d == '0') {
                if (fraction) --exponent;
                return;
            }
            if (digits < 19) {
                mantissa = mantissa * 10 + static_cast<std::uint64_t>(d - '0');
                ++digits;
                if (fraction) --exponent;
            } else {
                exact = false;
                if (!fraction) ++exponent;
            }
        };
        if (negative && text_.substr(pos_, 8) == "Infinity")
            fail(start, "-Infinity is not a JSON number (the model gave a non-finite attention weight)");
        if (peek() == '0') {
            ++pos_;
        } else if (at_digit()) {
            while (at_digit()) digit(text_[pos_++], false);
        } else {
            fail(pos_, "unexpected " + shown_char(pos_) + "; expected a digit");
        }
        if (peek() == '.') {
            ++pos_;
            if (!at_digit()) fail(pos_, "unexpected " + shown_char(pos_) + "; expected a digit after '.'");
            while (at_digit()) digit(text_[pos_++], true);
        }
        if (peek() == 'e' || peek() == 'E') {
            ++pos_;
            const bool minus = peek() == '-';
            if (peek() == '-' || peek() == '+') ++pos_;
            if (!at_digit()) fail(pos_, "unexpected " + shown_char(pos_) + "; expected a digit in the exponent");
            int e = 0;
            while (at_digit()) e = std::min(e * 10 + (text_[pos_++] - '0'), 100000);
            exponent += minus ? -e : e;
        }
        double v;
        bool signed_already = false;
        if (mantissa == 0) {
            v = 0;
        } else if (exact && exponent >= -64 && exponent <= 22) {
            // mantissa ≤ 2^53 and |exponent| ≤ 22: both factors exact, one correctly rounded step
            // (Clinger's fast path). Otherwise within a few double ulps: far below a float's.
            static constexpr double kPow10[] = {
                1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
                1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
                1e32, 1e33, 1e34, 1e35, 1e36, 1e37, 1e38, 1e39, 1e40, 1e41, 1e42, 1e43, 1e44, 1e45, 1e46,
                1e47, 1e48, 1e49, 1e50, 1e51, 1e52, 1e53, 1e54, 1e55, 1e56, 1e57, 1e58, 1e59, 1e60, 1e61,
                1e62, 1e63, 1e64};
            v = exponent >= 0 ? static_cast<double>(mantissa) * kPow10[exponent]
                              : static_cast<double>(mantissa) / kPow10[-exponent];
        } else if (exact && exponent < -64) {
            v = 0;  // below 1e19 · 1e-65: under the smallest float
        } else {
            // Rare (more than 19 digits, or 1e23 and up): the C library, on a copy that ends.
            const std::string literal(text_.substr(start, pos_ - start));
            v = std::strtod(literal.c_str(), nullptr);
            signed_already = true;
        }
        if (!std::isfinite(v)) fail(start, "number overflow parsing '" + std::string(text_.substr(start, pos_ - start)) + "'");
        return negative && !signed_already ? -v : v;
    }

    // The text between quotes, decoded by nlohmann (escapes, \u surrogates, UTF-8 checks).
    std::string string() {
        const size_t start = pos_++;
        while (pos_ < text_.size() && text_[pos_] != '"') pos_ += text_[pos_] == '\\' ? 2 : 1;
        if (pos_ >= text_.size()) fail(start, "a string that never ends");
        ++pos_;
        try {
            return nlohmann::json::parse(text_.substr(start, pos_ - start)).get<std::string>();
        } catch (const nlohmann::json::exception& e) {
            const auto* parse = dynamic_cast<const nlohmann::json::parse_error*>(&e);
            const size_t at = start + (parse && parse->byte > 0 ? parse->byte - 1 : 0);
            // "[json.exception.parse_error.101] parse error at line 1, column 4: syntax error while
            // parsing value - invalid string: ...; last read: '...'": keep the "invalid string"
            // part (what was read may be the ill-formed byte itself).
            std::string message = e.what();
            const size_t from = message.find(" - "), to = message.find("; last read");
            fail(at, from == std::string::npos ? "invalid string" : message.substr(from + 3, to - from - 3));
        }
    }

    Value array(int depth) {
        ++pos_;  // '['
        Value v;
        v.type = Value::Type::Array;
        v.numeric = true;
        skip_space();
        if (peek() == ']') {
            ++pos_;
            v.numeric = false;
            return v;
        }
        while (true) {
            skip_space();
            const char c = peek();
            if (v.numeric && (c == '-' || (c >= '0' && c <= '9'))) {
                if (v.numbers.empty()) v.numbers.reserve(row_size_);  // rows of a map are alike
                v.numbers.push_back(static_cast<float>(number()));
            } else {
                if (v.numeric) {  // not all numbers after all: the numbers so far become Values
                    for (float x : v.numbers) {
                        Value n;
                        n.type = Value::Type::Number;
                        n.number = x;
                        v.items.push_back(std::move(n));
                    }
                    v.numbers.clear();
                    v.numeric = false;
                }
                v.items.push_back(value(depth + 1));
            }
            skip_space();
            if (peek() == ']') {
                ++pos_;
                if (v.numeric) row_size_ = v.numbers.size();
                return v;
            }
            expect(',', "',' or ']'");
        }
    }

    Value object(int depth) {
        ++pos_;  // '{'
        Value v;
        v.type = Value::Type::Object;
        skip_space();
        if (peek() == '}') {
            ++pos_;
            return v;
        }
        while (true) {
            skip_space();
            if (peek() != '"') fail(pos_, "unexpected " + shown_char(pos_) + "; expected a string key");
            v.keys.push_back(string());
            skip_space();
            expect(':', "':'");
            skip_space();
            v.items.push_back(value(depth + 1));
            skip_space();
            if (peek() == '}') {
                ++pos_;
                return v;
            }
            expect(',', "',' or '}'");
        }
    }
};

std::vector<std::string> read_tokens(const std::string& field, const Value& j) {
    if (!j.is_array() || j.empty()) expected(field, "a non-empty array of token strings", j);
    if (j.size() > static_cast<size_t>(kMaxImportTokens))
        throw SceneError(field, "expected at most " + std::to_string(kMaxImportTokens) + " tokens, got " +
                                    std::to_string(j.size()));
    std::vector<std::string> tokens;
    require_values(field, j, "a string");
    tokens.reserve(j.size());
    for (size_t i = 0; i < j.size(); ++i) {
        if (!j[i].is_string()) expected(at(field, i), "a string", j[i]);
        tokens.push_back(j[i].text);
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

// The weight row r of head h of layer l gives to no token (gpt-oss's learned sinks: "sinks"
// [layer][head][query], SPEC §5), checked as a weight; 0 without sinks.
float sink_of(const Value* sinks, size_t l, size_t h, size_t r, size_t T_q) {
    if (!sinks) return 0.0f;
    const std::string field = at(at(at("sinks", l), h), r);
    const Value* v = sinks;
    for (size_t i : {l, h}) {
        if (!v->is_array() || v->numeric || i >= v->size())
            throw SceneError(field, "missing (every row of \"attention\" needs its sink)");
        v = &(*v)[i];
    }
    if (!v->is_array() || !v->numeric || v->size() != T_q)
        throw SceneError(at(at("sinks", l), h), "expected " + std::to_string(T_q) + " numbers");
    const float x = v->numbers[r];
    if (!(x >= 0 && x <= 1)) throw SceneError(field, "expected a weight in [0, 1], got " + shown_number(x));
    return x;
}

// Reads [layer][head][query][key], or [layer][1][head][query][key] (Hugging Face's batch of
// one), into stack. `budget` is what is left of kMaxImportValues across all stacks. With
// `sinks`, each row sums to 1 less its sink's weight.
void read_stack(const Value& j, const StackSpec& spec, AttentionStack& stack, long long& budget, const Value* sinks = nullptr) {
    const std::string& field = spec.field;
    const size_t T_q = stack.queries.size(), T_k = stack.keys.size();
    if (!j.is_array() || j.empty()) expected(field, "a non-empty array of layers [layer][head][query][key]", j);
    if (j.size() > static_cast<size_t>(kMaxImportLayers))
        throw SceneError(field, "expected at most " + std::to_string(kMaxImportLayers) + " layers, got " +
                                    std::to_string(j.size()));
    require_values(field, j, "a non-empty array of heads");
    const size_t layers = j.size();
    stack.name = spec.name;
    stack.layers = static_cast<int>(layers);
    stack.heads = 0;
    stack.maps.clear();

    for (size_t l = 0; l < layers; ++l) {
        std::string layer_field = at(field, l);
        const Value* layer = &j[l];
        if (!layer->is_array() || layer->empty()) expected(layer_field, "a non-empty array of heads", *layer);
        require_values(layer_field, *layer, "an array of rows");
        // A batch dimension: [1][head][q][k]. Told apart from [head][q][k] by depth.
        const Value& probe = (*layer)[0];
        const bool batched = probe.is_array() && !probe.numeric && !probe.empty() && probe[0].is_array() &&
                             !probe[0].numeric && !probe[0].empty() && probe[0][0].is_array();
        if (batched) {
            if (layer->size() != 1)
                throw SceneError(layer_field, "expected a batch of one sequence [1][head][query][key], got a batch of " +
                                                  std::to_string(layer->size()));
            layer = &(*layer)[0];
            layer_field = at(layer_field, 0);
            if (!layer->is_array() || layer->empty()) expected(layer_field, "a non-empty array of heads", *layer);
            require_values(layer_field, *layer, "an array of rows");
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
            const Value& head = (*layer)[h];
            if (!head.is_array())
                expected(head_field, "an array of " + std::to_string(T_q) + " rows (one per " + spec.query_role + ")", head);
            if (head.size() != T_q)
                throw SceneError(head_field, "expected " + std::to_string(T_q) + " rows (one per " + spec.query_role +
                                                 "), got " + std::to_string(head.size()));
            const std::string row_what =
                "an array of " + std::to_string(T_k) + " numbers (one per " + spec.key_role + ")";
            require_values(head_field, head, row_what);
            Matrix m(static_cast<Eigen::Index>(T_q), static_cast<Eigen::Index>(T_k));
            for (size_t r = 0; r < T_q; ++r) {
                const Value& row = head[r];
                if (!row.is_array()) expected(at(head_field, r), row_what, row);
                if (row.size() != T_k)
                    throw SceneError(at(head_field, r), "expected " + std::to_string(T_k) + " numbers (one per " +
                                                            spec.key_role + "), got " + std::to_string(row.size()));
                if (!row.numeric)  // an array of T_k things, not all numbers: name the first that is not
                    for (size_t c = 0; c < T_k; ++c)
                        if (!row[c].is_number()) expected(at(at(head_field, r), c), "a number", row[c]);
                const float* in = row.numeric ? row.numbers.data() : nullptr;
                float* out = m.data() + r * T_k;
                for (size_t c = 0; c < T_k; ++c) out[c] = in ? in[c] : static_cast<float>(row[c].number);
                check_import_row(at(head_field, r), out, T_k, sink_of(sinks, l, h, r, T_q));
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
                                       "encoder_attention", "decoder_attention", "cross_attention", "sinks"};
// What `attnviz run --json` adds beside them (SPEC.md §5), named like them but metadata here: a
// run's output opens as an import.
constexpr const char* kRunFields[] = {"image_tokens", "vision_attention", "generated_tokens", "hidden_tokens"};

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && std::string_view(s).substr(s.size() - suffix.size()) == suffix;
}

bool is_one_of(const std::string& key, const auto& list) {
    for (const char* k : list)
        if (key == k) return true;
    return false;
}

ImportedAttention read_bertviz(const Value& root) {
    ImportedAttention result;
    const Value& list = root["attention"];
    long long budget = kMaxImportValues;
    require_values("attention", list, "an object");
    // BertViz's names, in the order a SPEC §3 file holds them.
    const std::pair<const char*, const char*> kinds[] = {
        {"All", "attention"}, {"Encoder", "encoder_attention"}, {"Decoder", "decoder_attention"}, {"Cross", "cross_attention"}};
    std::vector<std::pair<int, AttentionStack>> found;
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string field = at("attention", i);
        const Value& entry = list[i];
        if (!entry.is_object()) expected(field, "an object {\"name\", \"attn\", \"left_text\", \"right_text\"}", entry);
        std::string name = "All";  // a self-attention model without sentence B has name null
        if (entry.contains("name") && !entry["name"].is_null()) {
            if (!entry["name"].is_string()) expected(field + ".name", "a string or null", entry["name"]);
            name = entry["name"].text;
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

void check_import_row(const std::string& field, const float* row, size_t n, float sink) {
    double sum = 0;
    for (size_t c = 0; c < n; ++c) {
        const float x = row[c];
        if (!(x >= -kTolerance && x <= 1 + kTolerance))  // also catches NaN
            throw SceneError(at(field, c), "expected an attention weight in [0, 1], got " + shown_number(x));
        sum += x;
    }
    if (std::fabs(sum - (1 - sink)) > kTolerance && std::fabs(sum) > kTolerance)
        throw SceneError(field, sink > 0 ? "expected a row that sums to 1 less its sink's " + shown_number(sink) + ", got a sum of " +
                                               shown_number(sum)
                                         : "expected a row that sums to 1 (softmax output; 0 if fully masked), got a sum of " +
                                               shown_number(sum));
}

ImportedAttention read_import(std::string_view text) {
    const Value root = Parser(text).document();
    if (!root.is_object()) expected("(top level)", "a JSON object (SPEC.md §3)", root);

    // BertViz: "attention" is a list of {name, attn, left_text, right_text} objects.
    if (root.contains("attention") && root["attention"].is_array() && !root["attention"].numeric &&
        !root["attention"].empty() && root["attention"][0].is_object()) {
        for (const std::string& key : root.keys)
            if (!is_one_of(key, kBertVizFields))
                throw SceneError(key, "unknown field in a BertViz export (expected attention, include_layers, "
                                      "include_heads, total_heads, default_filter, display_mode, root_div_id)");
        return read_bertviz(root);
    }

    // SPEC §3. Other fields are metadata an exporter may add ("text", "attention_mask"), but a
    // field named like attention or tokens ("attentions", Hugging Face's name) is a mistake:
    // saying so beats ignoring it.
    for (const std::string& key : root.keys)
        if (!is_one_of(key, kSpecFields) && !is_one_of(key, kRunFields) && (ends_with(key, "attention") || ends_with(key, "attentions") ||
                                             ends_with(key, "tokens")))
            throw SceneError(key, "unknown field (expected tokens and attention, or encoder_tokens, decoder_tokens, "
                                  "encoder_attention, decoder_attention and cross_attention)");

    ImportedAttention result;
    if (root.contains("model")) {
        if (!root["model"].is_string()) expected("model", "a string", root["model"]);
        result.model = root["model"].text;
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
        const Value* sinks = root.contains("sinks") ? &root["sinks"] : nullptr;
        read_stack(root["attention"], {"attention", "attention", "token", "token"}, stack, budget, sinks);
        stack.sinks = sinks != nullptr;
        result.stacks.push_back(std::move(stack));
        return result;
    }
    if (!encoder_decoder) {
        std::string keys;
        for (const std::string& key : root.keys) keys += (keys.empty() ? "" : ", ") + key;
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

// [SECTION] Import or scene: the top-level keys ---------------------------------------------

namespace {

// The top-level keys that make a file an import (SPEC.md §3; BertViz's list is "attention").
constexpr std::string_view kImportKeys[] = {"attention", "encoder_attention", "decoder_attention", "cross_attention"};
constexpr size_t kLongestImportKey = 17;  // "encoder_attention"

// Walks the top-level object only: a key is read (escapes decoded, into a fixed buffer), a value
// is skipped by its strings and brackets. Numbers and literals are stepped over unread, and
// bracket kinds are counted, not matched: what JSON is inside a value is the reader's to say.
class TopLevelKeys {
public:
    explicit TopLevelKeys(std::string_view text) : text_(text) {}

    // Import at the first top-level import key; Scene when the object ends without one;
    // nullopt when the structure breaks first.
    std::optional<FileKind> scan() {
        if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a UTF-8 BOM, as both readers accept
        skip_space();
        if (!eat('{')) return std::nullopt;
        skip_space();
        if (eat('}')) return end();
        for (;;) {
            skip_space();
            bool import_key = false;
            if (peek() != '"' || !string(&import_key)) return std::nullopt;
            if (import_key) return FileKind::Import;
            skip_space();
            if (!eat(':')) return std::nullopt;
            skip_space();
            if (!value()) return std::nullopt;
            skip_space();
            if (eat(',')) continue;
            if (eat('}')) return end();
            return std::nullopt;
        }
    }

private:
    std::string_view text_;
    size_t pos_ = 0;

    char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
    bool eat(char c) {
        if (peek() != c || pos_ >= text_.size()) return false;
        ++pos_;
        return true;
    }
    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t'))
            ++pos_;
    }
    // After the object: nothing but white space, up to the end or a NUL byte (where nlohmann,
    // the scene reader, stops reading too).
    std::optional<FileKind> end() {
        skip_space();
        return peek() == '\0' ? std::optional(FileKind::Scene) : std::nullopt;
    }

    // A string at text_[pos_] == '"'. With import_key, also whether it decodes to an import key.
    bool string(bool* import_key) {
        ++pos_;
        char key[kLongestImportKey];
        size_t length = 0;
        bool fits = import_key != nullptr;  // still possibly one of kImportKeys
        auto append = [&](unsigned c) {
            if (fits && c < 0x80 && length < kLongestImportKey) key[length++] = static_cast<char>(c);
            else fits = false;
        };
        while (pos_ < text_.size()) {
            const auto c = static_cast<unsigned char>(text_[pos_++]);
            if (c == '"') {
                if (fits)
                    for (std::string_view name : kImportKeys) *import_key = *import_key || name == std::string_view(key, length);
                return true;
            }
            if (c < 0x20) return false;  // a raw control character: not JSON
            if (c != '\\') {
                append(c);
                continue;
            }
            if (pos_ >= text_.size()) return false;
            const char e = text_[pos_++];
            switch (e) {
                case '"': case '\\': case '/': append(static_cast<unsigned char>(e)); break;
                case 'b': case 'f': case 'n': case 'r': case 't': append(0x80); break;  // in no key name
                case 'u': {
                    unsigned v = 0;
                    for (int k = 0; k < 4; ++k, ++pos_) {
                        const char h = peek();
                        const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                    : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                        if (d < 0 || pos_ >= text_.size()) return false;
                        v = v * 16 + static_cast<unsigned>(d);
                    }
                    append(v);
                    break;
                }
                default: return false;
            }
        }
        return false;  // never ends
    }

    // One value, skipped: a string, an object or array (to its closing bracket), else a number
    // or literal (to the next delimiter, unread).
    bool value() {
        const char c = peek();
        if (c == '"') return string(nullptr);
        if (c != '{' && c != '[') {
            const size_t start = pos_;
            while (pos_ < text_.size() && !std::strchr(" \t\n\r,}]{[\":", text_[pos_])) ++pos_;
            return pos_ > start;
        }
        size_t depth = 0;
        while (pos_ < text_.size()) {
            const char b = text_[pos_];
            if (b == '"') {
                if (!string(nullptr)) return false;
                continue;
            }
            ++pos_;
            if (b == '{' || b == '[') ++depth;
            else if ((b == '}' || b == ']') && --depth == 0) return true;
        }
        return false;
    }
};

}  // namespace

bool is_safetensors(std::string_view b) {
    return b.size() > 8 && b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] == 0 && b[8] == '{';
}

FileKind file_kind(std::string_view json_text) {
    if (is_safetensors(json_text)) return FileKind::Import;
    if (const std::optional<FileKind> kind = TopLevelKeys(json_text).scan()) return *kind;
    // Broken before the first import key: decide by the names, quoted, anywhere.
    for (std::string_view name : kImportKeys) {
        const std::string quoted = "\"" + std::string(name) + "\"";
        if (json_text.find(quoted) != std::string_view::npos) return FileKind::Import;
    }
    return FileKind::Scene;
}

bool read_file(const std::string& path, std::string& text) {
    std::ifstream file(path, std::ios::binary);
    if (!file) return false;
    try {  // a folder opens, then throws on reading (libstdc++) or claims an absurd size
        file.seekg(0, std::ios::end);
        const std::streamoff size = file ? static_cast<std::streamoff>(file.tellg()) : -1;
        file.clear();
        file.seekg(0);
        if (size < 0 || !file) {  // not seekable (a pipe): as it comes
            file.clear();
            text.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
            return !file.bad();
        }
        text.resize(static_cast<size_t>(size));
        file.read(text.data(), size);
        if (file.gcount() == size) return true;
        text.clear();  // fewer bytes than its size: a folder (Emscripten's NODERAWFS), or it shrank
        return false;
    } catch (const std::exception&) {
        text.clear();
        return false;
    }
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

// Byte-level BPE (GPT-2, RoBERTa, BART) writes each byte of UTF-8 text as one character: the
// printable bytes as themselves, the other 68 (controls, space, 0x7F-0xA0, 0xAD) as U+0100 on,
// in byte order. So "我" (E6 88 91) is the token "æĪĳ". Decoding gives the text back, when
// every character is from that alphabet and the bytes are whole UTF-8.
bool byte_level_printable(std::uint32_t c) {
    return (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
}

// The code points of s; valid is false (and the list cut short) at the first bad byte.
std::vector<std::uint32_t> code_points(std::string_view s, bool& valid) {
    std::vector<std::uint32_t> out;
    valid = true;
    for (size_t i = 0; i < s.size();) {
        const size_t start = i;
        const char32_t cp = decode_utf8(s, i);
        if (cp == kReplacementCharacter && i - start == 1) {
            valid = false;
            return out;
        }
        out.push_back(cp);
    }
    return out;
}

// The text of a byte-level BPE token, or false when it is not one (or not whole characters).
bool decode_byte_level(const std::string& token, std::string& text) {
    bool valid = false;
    const std::vector<std::uint32_t> cps = code_points(token, valid);
    if (!valid) return false;
    bool beyond_ascii = false;
    std::string bytes;
    for (std::uint32_t c : cps) {
        if (byte_level_printable(c)) {
            bytes += static_cast<char>(c);
        } else if (c >= 0x100 && c < 0x100 + 68) {
            int n = static_cast<int>(c - 0x100);  // the n-th byte that is not printable
            int b = 0;
            for (; b < 256; ++b)
                if (!byte_level_printable(static_cast<std::uint32_t>(b)) && n-- == 0) break;
            bytes += static_cast<char>(b);
        } else {
            return false;
        }
        beyond_ascii = beyond_ascii || c >= 0x80;
    }
    if (!beyond_ascii) return false;  // plain ASCII: nothing to decode
    code_points(bytes, valid);
    if (!valid) return false;
    text = replace_all(replace_all(std::move(bytes), "\n", kNewlineMark), "\r", "");
    return true;
}

}  // namespace

std::string display_token(const std::string& token) {
    if (is_special(token)) return token;
    if (starts_with(token, "##") && token.size() > 2) return token.substr(2);
    std::string s;
    if (decode_byte_level(token, s)) return s;
    s = replace_all(token, kBpeSpace, " ");
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
    std::vector<std::string> pieces;  // per word: its tokens joined (markers kept, "##" dropped)
    bool previous_ends_word = true;   // after a special token or a newline, a new word begins
    for (size_t i = 0; i < tokens.size(); ++i) {
        const std::string& t = tokens[i];
        const bool special = is_special(t);
        bool continues = false;
        if (!special && !previous_ends_word && !words.empty()) {
            if (wordpiece) continues = starts_with(t, "##") && t.size() > 2;
            else if (space_marked) continues = !starts_with(t, kBpeSpace) && !starts_with(t, kSpmSpace) &&
                                               !starts_with(t, kBpeNewline);
        }
        if (continues) {
            pieces.back() += wordpiece ? t.substr(2) : t;
            ++words.back().count;
        } else {
            words.push_back({"", static_cast<int>(i), 1});
            pieces.push_back(t);
        }
        previous_ends_word = special || t.find(kBpeNewline) != std::string::npos;
    }
    // The word's text from all its pieces at once: a byte-level BPE character may be split
    // between two tokens. The leading space marks a word start: not part of the word.
    for (size_t w = 0; w < words.size(); ++w) {
        const std::string text = display_token(pieces[w]);
        const size_t first = text.find_first_not_of(' ');
        words[w].text = first == std::string::npos ? text : text.substr(first);
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
