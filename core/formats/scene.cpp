// scene.cpp: scene validation, the JSON reader and writer, and compute().
//
// [SECTION] Errors and equality
// [SECTION] Validation
// [SECTION] Reading JSON
// [SECTION] Writing JSON
// [SECTION] Computing
#include "scene.hpp"

#include "kernels.hpp"
#include "text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace attn {

using nlohmann::json;

// [SECTION] Errors and equality --------------------------------------------------------------

SceneError::SceneError(std::string where, const std::string& expected)
    : std::runtime_error(where.empty() ? expected : where + ": " + expected), where_(std::move(where)) {}

namespace {

template <typename A, typename B>
bool same(const A& a, const B& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() && (a.size() == 0 || a == b);
}

template <typename M>
bool same(const std::optional<M>& a, const std::optional<M>& b) {
    return a.has_value() == b.has_value() && (!a || same(*a, *b));
}

}  // namespace

bool operator==(const ExplicitWeights& a, const ExplicitWeights& b) {
    return same(a.w_q, b.w_q) && same(a.w_k, b.w_k) && same(a.w_v, b.w_v) && same(a.w_o, b.w_o) &&
           same(a.b_q, b.b_q) && same(a.b_k, b.b_k) && same(a.b_v, b.b_v) && same(a.b_o, b.b_o);
}

bool operator==(const Scene& a, const Scene& b) {
    return a.name == b.name && a.description == b.description && a.kind == b.kind &&
           a.tokens == b.tokens && a.source_tokens == b.source_tokens &&
           same(a.embeddings, b.embeddings) && same(a.source_embeddings, b.source_embeddings) &&
           a.d_model == b.d_model && a.heads == b.heads && a.weights == b.weights &&
           a.scale == b.scale && a.causal_mask == b.causal_mask && same(a.mask_matrix, b.mask_matrix) &&
           a.key_padding == b.key_padding && a.positional == b.positional;
}

const char* kind_name(AttentionKind kind) {
    switch (kind) {
        case AttentionKind::Self: return "self";
        case AttentionKind::Masked: return "masked";
        case AttentionKind::Cross: return "cross";
    }
    return "self";
}

// [SECTION] Validation -----------------------------------------------------------------------

// "line:column" of a byte offset into text (1-based; columns count bytes).
std::string line_column(std::string_view text, size_t byte) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < byte && i < text.size(); ++i) {
        if (text[i] == '\n') ++line, column = 1;
        else ++column;
    }
    return std::to_string(line) + ":" + std::to_string(column);
}

namespace {

std::string index_path(const std::string& field, Eigen::Index i, Eigen::Index j = -1) {
    std::string s = field + "[" + std::to_string(i) + "]";
    if (j >= 0) s += "[" + std::to_string(j) + "]";
    return s;
}

void check_values(const std::string& field, const Matrix& m) {
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j)
            if (!std::isfinite(m(i, j)) || std::fabs(m(i, j)) > kMaxAbsValue)
                throw SceneError(index_path(field, i, j), "expected a finite number within ±1e6");
}

void check_matrix(const std::string& field, const Matrix& m, Eigen::Index rows, Eigen::Index cols,
                  const char* shape) {
    if (m.rows() != rows || m.cols() != cols)
        throw SceneError(field, "expected a " + std::to_string(rows) + "×" + std::to_string(cols) +
                                    " matrix (" + shape + "), got " + std::to_string(m.rows()) + "×" +
                                    std::to_string(m.cols()));
    check_values(field, m);
}

void check_tokens(const std::string& field, const std::vector<std::string>& tokens) {
    if (tokens.empty()) throw SceneError(field, "expected at least one token");
    if (static_cast<int>(tokens.size()) > kMaxTokens)
        throw SceneError(field, "expected at most " + std::to_string(kMaxTokens) + " tokens, got " +
                                    std::to_string(tokens.size()));
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i].empty()) throw SceneError(index_path(field, static_cast<Eigen::Index>(i)), "expected a non-empty token");
}

}  // namespace

void validate(const Scene& s) {
    const bool cross = s.kind == AttentionKind::Cross;
    check_tokens("tokens", s.tokens);
    if (cross) check_tokens("source_tokens", s.source_tokens);
    else if (!s.source_tokens.empty()) throw SceneError("source_tokens", "only allowed with kind \"cross\"");
    if (!cross && s.source_embeddings) throw SceneError("source_embeddings", "only allowed with kind \"cross\"");

    if (s.d_model < 1 || s.d_model > kMaxDModel)
        throw SceneError("d_model", "expected an integer from 1 to " + std::to_string(kMaxDModel) +
                                        ", got " + std::to_string(s.d_model));
    if (s.heads < 1 || s.heads > kMaxHeads)
        throw SceneError("heads", "expected an integer from 1 to " + std::to_string(kMaxHeads) +
                                      ", got " + std::to_string(s.heads));
    if (s.d_model % s.heads != 0)
        throw SceneError("heads", "expected a divisor of d_model (" + std::to_string(s.d_model) +
                                      "), got " + std::to_string(s.heads));

    const Eigen::Index T_q = static_cast<Eigen::Index>(s.tokens.size());
    const Eigen::Index T_k = static_cast<Eigen::Index>(s.key_tokens().size());
    if (s.embeddings) check_matrix("embeddings", *s.embeddings, T_q, s.d_model, "tokens × d_model");
    if (s.source_embeddings)
        check_matrix("source_embeddings", *s.source_embeddings, T_k, s.d_model, "source_tokens × d_model");

    if (const auto* w = std::get_if<ExplicitWeights>(&s.weights)) {
        const char* sq = "d_model × d_model";
        check_matrix("weights.w_q", w->w_q, s.d_model, s.d_model, sq);
        check_matrix("weights.w_k", w->w_k, s.d_model, s.d_model, sq);
        check_matrix("weights.w_v", w->w_v, s.d_model, s.d_model, sq);
        check_matrix("weights.w_o", w->w_o, s.d_model, s.d_model, sq);
        const std::pair<const char*, const RowVector*> biases[] = {
            {"weights.b_q", &w->b_q}, {"weights.b_k", &w->b_k}, {"weights.b_v", &w->b_v}, {"weights.b_o", &w->b_o}};
        for (const auto& [field, b] : biases)
            if (b->size() != 0) check_matrix(field, *b, 1, s.d_model, "d_model entries");
    }
    if (s.scale.kind == ScaleKind::Divisor && !(std::isfinite(s.scale.divisor) && s.scale.divisor > 0))
        throw SceneError("scale", "expected a positive finite divisor");
    if (s.mask_matrix) {
        const MaskMatrix& m = *s.mask_matrix;
        if (m.rows() != T_q || m.cols() != T_k)
            throw SceneError("mask", "expected a " + std::to_string(T_q) + "×" + std::to_string(T_k) +
                                         " matrix of 0/1 (tokens × keys), got " + std::to_string(m.rows()) +
                                         "×" + std::to_string(m.cols()));
    }
    if (!s.key_padding.empty() && static_cast<Eigen::Index>(s.key_padding.size()) != T_k)
        throw SceneError("key_padding", "expected " + std::to_string(T_k) + " entries (one per key), got " +
                                            std::to_string(s.key_padding.size()));
}

// [SECTION] Reading JSON ---------------------------------------------------------------------

namespace {

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
    }
    throw SceneError(field, "expected " + what + ", got " + g);
}

int read_int(const std::string& field, const json& j, int lo, int hi) {
    if (!j.is_number() || !std::isfinite(j.get<double>()) || j.get<double>() != std::floor(j.get<double>()) ||
        j.get<double>() < lo || j.get<double>() > hi)
        expected(field, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi), j);
    return static_cast<int>(j.get<double>());
}

std::vector<std::string> read_tokens(const std::string& field, const json& j) {
    if (j.is_string()) return tokenize(j.get<std::string>());
    if (!j.is_array()) expected(field, "an array of strings or a sentence", j);
    std::vector<std::string> tokens;
    for (size_t i = 0; i < j.size(); ++i) {
        if (!j[i].is_string()) expected(index_path(field, static_cast<Eigen::Index>(i)), "a string", j[i]);
        tokens.push_back(j[i].get<std::string>());
    }
    return tokens;
}

float read_float(const std::string& field, const json& j) {
    if (!j.is_number()) expected(field, "a number", j);
    double v = j.get<double>();
    if (!std::isfinite(v) || std::fabs(v) > kMaxAbsValue) expected(field, "a finite number within ±1e6", j);
    return static_cast<float>(v);
}

// A rectangular array of arrays of numbers (rows may be any count; columns must agree).
Matrix read_matrix(const std::string& field, const json& j) {
    if (!j.is_array() || j.empty()) expected(field, "a non-empty array of rows", j);
    const size_t rows = j.size();
    if (!j[0].is_array()) expected(index_path(field, 0), "an array of numbers", j[0]);
    const size_t cols = j[0].size();
    if (cols == 0) expected(index_path(field, 0), "a non-empty array of numbers", j[0]);
    if (rows > static_cast<size_t>(kMaxTokens) || cols > static_cast<size_t>(kMaxDModel))
        throw SceneError(field, "expected at most " + std::to_string(kMaxTokens) + " rows of at most " +
                                    std::to_string(kMaxDModel) + " numbers");
    Matrix m(rows, cols);
    for (size_t r = 0; r < rows; ++r) {
        const std::string row_field = index_path(field, static_cast<Eigen::Index>(r));
        if (!j[r].is_array()) expected(row_field, "an array of numbers", j[r]);
        if (j[r].size() != cols)
            throw SceneError(row_field, "expected " + std::to_string(cols) + " numbers like row 0, got " +
                                            std::to_string(j[r].size()));
        for (size_t c = 0; c < cols; ++c)
            m(r, c) = read_float(index_path(field, static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)), j[r][c]);
    }
    return m;
}

RowVector read_vector(const std::string& field, const json& j) {
    if (!j.is_array()) expected(field, "an array of numbers", j);
    RowVector v(j.size());
    for (size_t i = 0; i < j.size(); ++i) v(i) = read_float(index_path(field, static_cast<Eigen::Index>(i)), j[i]);
    return v;
}

std::uint8_t read_bit(const std::string& field, const json& j) {
    if (j.is_boolean()) return j.get<bool>() ? 1 : 0;
    if (j.is_number() && (j.get<double>() == 0 || j.get<double>() == 1)) return j.get<double>() == 1 ? 1 : 0;
    expected(field, "0 or 1", j);
}

WeightsSpec read_weights(const json& j) {
    if (j.is_string() && j.get<std::string>() == "identity") return IdentityWeights{};
    if (!j.is_object()) expected("weights", "\"identity\", {\"seed\": n} or {\"w_q\", \"w_k\", \"w_v\", \"w_o\"}", j);
    if (j.contains("seed")) {
        if (j.size() != 1) throw SceneError("weights", "expected {\"seed\": n} alone, without matrices");
        const json& s = j["seed"];
        if (!s.is_number_unsigned()) expected("weights.seed", "a non-negative integer", s);
        return SeededWeights{s.get<std::uint64_t>()};
    }
    ExplicitWeights w;
    const std::pair<const char*, Matrix*> mats[] = {{"w_q", &w.w_q}, {"w_k", &w.w_k}, {"w_v", &w.w_v}, {"w_o", &w.w_o}};
    const std::pair<const char*, RowVector*> vecs[] = {{"b_q", &w.b_q}, {"b_k", &w.b_k}, {"b_v", &w.b_v}, {"b_o", &w.b_o}};
    for (const auto& [key, value] : j.items()) {
        bool known = false;
        for (const auto& [name, m] : mats)
            if (key == name) known = true, *m = read_matrix(std::string("weights.") + name, value);
        for (const auto& [name, v] : vecs)
            if (key == name) known = true, *v = read_vector(std::string("weights.") + name, value);
        if (!known) throw SceneError("weights." + key, "unknown field (expected seed, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o)");
    }
    for (const auto& [name, m] : mats)
        if (m->size() == 0) throw SceneError(std::string("weights.") + name, "missing (explicit weights need w_q, w_k, w_v and w_o)");
    return w;
}

constexpr const char* kKnownFields[] = {"name", "description", "kind", "tokens", "source_tokens",
                                        "embeddings", "source_embeddings", "d_model", "heads", "weights",
                                        "scale", "mask", "key_padding", "positional"};

}  // namespace

Scene read_scene(std::string_view text) {
    json root;
    try {
        root = json::parse(text.begin(), text.end());
    } catch (const json::parse_error& e) {
        // nlohmann's message: "[json.exception.parse_error.101] parse error at line L, column C: ..."
        std::string message = e.what();
        size_t colon = message.find(": ", message.find("column"));
        std::string detail = colon == std::string::npos ? message : message.substr(colon + 2);
        size_t at = e.byte == 0 ? 0 : e.byte - 1;
        throw SceneError(line_column(text, at), "malformed JSON: " + detail);
    } catch (const json::out_of_range& e) {
        // A number too large for a double (1e999): nlohmann names the literal but not where.
        std::string message = e.what();
        size_t open = message.find('\''), close = message.rfind('\'');
        std::string literal = open < close ? message.substr(open + 1, close - open - 1) : "";
        size_t at = literal.empty() ? std::string_view::npos : text.find(literal);
        throw SceneError(at == std::string_view::npos ? "(number)" : line_column(text, at),
                         "malformed JSON: number overflow parsing '" + literal + "'");
    }
    if (!root.is_object()) expected("(top level)", "a JSON object", root);
    for (const auto& [key, value] : root.items()) {
        bool known = false;
        for (const char* k : kKnownFields) known = known || key == k;
        if (!known) throw SceneError(key, "unknown field (expected one of kind, tokens, source_tokens, embeddings, "
                                          "source_embeddings, d_model, heads, weights, scale, mask, key_padding, "
                                          "positional, name, description)");
    }

    Scene s;
    auto read_string = [&](const char* field) -> std::string {
        if (!root.contains(field)) return {};
        if (!root[field].is_string()) expected(field, "a string", root[field]);
        return root[field].get<std::string>();
    };
    s.name = read_string("name");
    s.description = read_string("description");

    if (root.contains("kind")) {
        const std::string kind = read_string("kind");
        if (kind == "self") s.kind = AttentionKind::Self;
        else if (kind == "masked") s.kind = AttentionKind::Masked;
        else if (kind == "cross") s.kind = AttentionKind::Cross;
        else expected("kind", "\"self\", \"masked\" or \"cross\"", root["kind"]);
    }
    if (!root.contains("tokens")) throw SceneError("tokens", "missing (expected an array of strings or a sentence)");
    s.tokens = read_tokens("tokens", root["tokens"]);
    if (root.contains("source_tokens")) s.source_tokens = read_tokens("source_tokens", root["source_tokens"]);
    else if (s.kind == AttentionKind::Cross)
        throw SceneError("source_tokens", "missing (kind \"cross\" needs the encoder-side tokens)");
    if (root.contains("embeddings")) s.embeddings = read_matrix("embeddings", root["embeddings"]);
    if (root.contains("source_embeddings")) s.source_embeddings = read_matrix("source_embeddings", root["source_embeddings"]);

    if (root.contains("heads")) s.heads = read_int("heads", root["heads"], 1, kMaxHeads);
    if (root.contains("weights")) s.weights = read_weights(root["weights"]);
    // d_model: given, else the width of the embeddings or the explicit weights, else 8 per head.
    if (root.contains("d_model")) s.d_model = read_int("d_model", root["d_model"], 1, kMaxDModel);
    else if (s.embeddings) s.d_model = static_cast<int>(s.embeddings->cols());
    else if (s.source_embeddings) s.d_model = static_cast<int>(s.source_embeddings->cols());
    else if (const auto* w = std::get_if<ExplicitWeights>(&s.weights)) s.d_model = static_cast<int>(w->w_q.rows());
    else s.d_model = std::min(8 * s.heads, kMaxDModel);

    if (root.contains("scale")) {
        const json& j = root["scale"];
        if (j.is_string() && j.get<std::string>() == "sqrt_dk") s.scale = {ScaleKind::InvSqrtDk, 1.0f};
        else if (j.is_string() && j.get<std::string>() == "none") s.scale = {ScaleKind::None, 1.0f};
        else if (j.is_number() && std::isfinite(j.get<double>()) && j.get<double>() > 0)
            s.scale = {ScaleKind::Divisor, static_cast<float>(j.get<double>())};
        else expected("scale", "\"sqrt_dk\", \"none\" or a positive number to divide the scores by", j);
    }
    if (root.contains("mask")) {
        const json& j = root["mask"];
        if (j.is_string() && j.get<std::string>() == "none") {
        } else if (j.is_string() && j.get<std::string>() == "causal") {
            s.causal_mask = true;
        } else if (j.is_array() && !j.empty() && j[0].is_array()) {
            const size_t rows = j.size(), cols = j[0].size();
            if (rows > static_cast<size_t>(kMaxTokens) || cols > static_cast<size_t>(kMaxTokens))
                throw SceneError("mask", "expected at most " + std::to_string(kMaxTokens) + " rows and columns");
            MaskMatrix m(rows, cols);
            for (size_t r = 0; r < rows; ++r) {
                const std::string row_field = index_path("mask", static_cast<Eigen::Index>(r));
                if (!j[r].is_array() || j[r].size() != cols)
                    expected(row_field, "an array of " + std::to_string(cols) + " 0/1 values like row 0", j[r]);
                for (size_t c = 0; c < cols; ++c)
                    m(r, c) = read_bit(index_path("mask", static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)), j[r][c]);
            }
            s.mask_matrix = std::move(m);
        } else {
            expected("mask", "\"none\", \"causal\" or a matrix of 0/1 (1 = may attend)", j);
        }
    }
    if (root.contains("key_padding")) {
        const json& j = root["key_padding"];
        if (!j.is_array()) expected("key_padding", "an array of 0/1 (1 = real token, 0 = padding)", j);
        for (size_t i = 0; i < j.size() && i <= static_cast<size_t>(kMaxTokens); ++i)
            s.key_padding.push_back(read_bit(index_path("key_padding", static_cast<Eigen::Index>(i)), j[i]));
    }
    if (root.contains("positional")) {
        const std::string p = root["positional"].is_string() ? root["positional"].get<std::string>() : "";
        if (p == "none") s.positional = Positional::None;
        else if (p == "sinusoidal") s.positional = Positional::Sinusoidal;
        else expected("positional", "\"none\" or \"sinusoidal\"", root["positional"]);
    }
    validate(s);
    return s;
}

// [SECTION] Writing JSON ---------------------------------------------------------------------

namespace {

// The shortest decimal that reads back as the same float, stored as the double of that
// decimal so the JSON shows "0.1", not "0.10000000149011612".
json number(float v) {
    if (!std::isfinite(v)) return nullptr;
    char buffer[32];
    for (int digits = 6; digits <= 9; ++digits) {
        std::snprintf(buffer, sizeof buffer, "%.*g", digits, static_cast<double>(v));
        if (std::strtof(buffer, nullptr) == v) break;
    }
    return std::strtod(buffer, nullptr);
}

template <typename M>
json matrix_json(const M& m) {
    json rows = json::array();
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        json row = json::array();
        for (Eigen::Index j = 0; j < m.cols(); ++j) row.push_back(number(m(i, j)));
        rows.push_back(std::move(row));
    }
    return rows;
}

json vector_json(const RowVector& v) {
    json a = json::array();
    for (Eigen::Index i = 0; i < v.size(); ++i) a.push_back(number(v(i)));
    return a;
}

}  // namespace

std::string write_scene(const Scene& s, bool pretty) {
    json j = json::object();
    if (!s.name.empty()) j["name"] = s.name;
    if (!s.description.empty()) j["description"] = s.description;
    j["kind"] = kind_name(s.kind);
    j["tokens"] = s.tokens;
    if (s.kind == AttentionKind::Cross) j["source_tokens"] = s.source_tokens;
    if (s.embeddings) j["embeddings"] = matrix_json(*s.embeddings);
    if (s.source_embeddings) j["source_embeddings"] = matrix_json(*s.source_embeddings);
    j["d_model"] = s.d_model;
    j["heads"] = s.heads;
    if (std::holds_alternative<IdentityWeights>(s.weights)) {
        j["weights"] = "identity";
    } else if (const auto* seeded = std::get_if<SeededWeights>(&s.weights)) {
        j["weights"] = {{"seed", seeded->seed}};
    } else {
        const auto& w = std::get<ExplicitWeights>(s.weights);
        json wj = {{"w_q", matrix_json(w.w_q)}, {"w_k", matrix_json(w.w_k)},
                   {"w_v", matrix_json(w.w_v)}, {"w_o", matrix_json(w.w_o)}};
        if (w.b_q.size()) wj["b_q"] = vector_json(w.b_q);
        if (w.b_k.size()) wj["b_k"] = vector_json(w.b_k);
        if (w.b_v.size()) wj["b_v"] = vector_json(w.b_v);
        if (w.b_o.size()) wj["b_o"] = vector_json(w.b_o);
        j["weights"] = std::move(wj);
    }
    switch (s.scale.kind) {
        case ScaleKind::InvSqrtDk: j["scale"] = "sqrt_dk"; break;
        case ScaleKind::None: j["scale"] = "none"; break;
        case ScaleKind::Divisor: j["scale"] = number(s.scale.divisor); break;
    }
    if (s.mask_matrix) j["mask"] = matrix_json(s.mask_matrix->cast<int>());
    else j["mask"] = s.causal_mask ? "causal" : "none";
    if (!s.key_padding.empty()) {
        json pad = json::array();
        for (auto b : s.key_padding) pad.push_back(int{b});
        j["key_padding"] = std::move(pad);
    }
    j["positional"] = s.positional == Positional::Sinusoidal ? "sinusoidal" : "none";
    return j.dump(pretty ? 2 : -1, ' ', false, json::error_handler_t::replace);
}

// [SECTION] Computing ------------------------------------------------------------------------

namespace {

Matrix inputs(const std::optional<Matrix>& given, const std::vector<std::string>& tokens, const Scene& s) {
    Matrix x = given ? *given : generated_embeddings(tokens, s.d_model);
    if (s.positional == Positional::Sinusoidal) x += sinusoidal_positions(static_cast<int>(tokens.size()), s.d_model);
    return x;
}

Weights weights_for(const Scene& s) {
    if (const auto* seeded = std::get_if<SeededWeights>(&s.weights)) return Weights::random(seeded->seed, s.d_model);
    if (const auto* w = std::get_if<ExplicitWeights>(&s.weights)) {
        auto bias = [&](const RowVector& b) { return b.size() ? b : RowVector::Zero(s.d_model); };
        return Weights{w->w_q, w->w_k, w->w_v, w->w_o, bias(w->b_q), bias(w->b_k), bias(w->b_v), bias(w->b_o)};
    }
    return Weights::identity(s.d_model);
}

}  // namespace

Trace compute(const Scene& s, std::int64_t max_cells) {
    Trace t;
    t.kind = s.kind;
    t.queries = s.tokens;
    t.keys = s.key_tokens();
    t.heads = s.heads;
    t.d_model = s.d_model;
    t.d_k = s.d_k();
    t.scale = s.scale;

    MaskSpec mask;
    mask.causal = s.kind == AttentionKind::Masked || s.causal_mask;
    mask.key_padding = s.key_padding;
    if (s.mask_matrix) mask.allowed = *s.mask_matrix;
    t.allowed = combine_masks(mask, t.T_q(), t.T_k());

    const Matrix x_q = inputs(s.embeddings, s.tokens, s);
    const Matrix x_kv = s.kind == AttentionKind::Cross ? inputs(s.source_embeddings, s.source_tokens, s) : x_q;
    const Weights w = weights_for(s);
    const bool is_long = std::int64_t{s.heads} * t.T_q() * t.T_k() > max_cells;
    // A long trace: the whole pipeline for the first rows, and every head's queries for the rest.
    const int rows = is_long ? std::min(kLongTraceRows, t.T_q()) : t.T_q();
    AttentionOptions options;
    options.n_heads = s.heads;
    options.scale = s.scale;
    options.mask.allowed = t.allowed.rows_between(0, rows);
    kernels::Context ctx;  // the best instruction set, as attention_rows'
    t.attention = multi_head_attention(ctx, x_q.topRows(rows), x_kv, w, options);
    t.w_o = w.w_o;
    if (is_long) t.long_q = std::make_shared<const Matrix>(project(ctx, x_q, w.w_q, w.b_q));
    return t;
}

namespace {
// Columns [first, first + cols) of m, every row.
MatrixRef columns(const Matrix& m, Eigen::Index first, Eigen::Index cols) {
    using Strided = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>;
    return Strided(m.data() + first, m.rows(), cols, Eigen::OuterStride<>(m.cols()));
}
}  // namespace

MatrixRef head_queries(const Trace& t, int head) {
    if (!t.long_q) return t.attention.heads[static_cast<size_t>(head)].q;
    return columns(*t.long_q, static_cast<Eigen::Index>(head) * t.d_k, t.d_k);
}

MatrixRef head_keys(const Trace& t, int head) {
    if (!t.long_k) return t.attention.heads[static_cast<size_t>(head)].k;
    return columns(*t.long_k, static_cast<Eigen::Index>(t.family.kv_head_of(head)) * t.d_k, t.d_k);
}

std::string write_trace(const Trace& t) {
    json j = json::object();
    j["kind"] = kind_name(t.kind);
    j["queries"] = t.queries;
    j["keys"] = t.keys;
    j["heads"] = t.heads;
    j["d_k"] = t.d_k;
    j["d_model"] = t.d_model;
    json heads = json::array();
    for (int i = 0; i < static_cast<int>(t.attention.heads.size()); ++i) {
        const HeadTrace& h = t.attention.heads[static_cast<size_t>(i)];
        heads.push_back({{"q", matrix_json(h.q)},
                         {"k", matrix_json(head_keys(t, i))},
                         {"v", matrix_json(h.v)},
                         {"scores", matrix_json(h.scores)},
                         {"scaled", matrix_json(h.scaled)},  // -inf (masked) becomes null
                         {"weights", matrix_json(h.weights)},
                         {"output", matrix_json(h.output)},
                         {"fully_masked_rows", h.fully_masked_rows}});
    }
    j["per_head"] = std::move(heads);
    j["output"] = matrix_json(t.attention.output);
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// [SECTION] Rows on demand -------------------------------------------------------------------

void attention_rows(const Trace& t, int head, int r0, int r1, float* weights, float* scaled) {
    const HeadTrace& h = t.attention.heads[static_cast<size_t>(head)];
    const int T_k = t.T_k();
    const auto cells = static_cast<size_t>(r1 - r0) * static_cast<size_t>(T_k);
    if (r1 <= h.weights.rows()) {  // kept in the trace
        std::copy_n(h.weights.data() + static_cast<std::ptrdiff_t>(r0) * T_k, cells, weights);
        if (scaled) std::copy_n(h.scaled.data() + static_cast<std::ptrdiff_t>(r0) * T_k, cells, scaled);
        return;
    }
    MaskMatrix ruled;  // a long run's mask is a rule: its rows are made here
    const MatrixRef q = head_queries(t, head), k = head_keys(t, head);
    kernels::HeadArgs args;
    args.T_q = r1 - r0, args.T_k = T_k, args.d_k = t.d_k;
    args.q = q.row(r0).data(), args.ld_q = static_cast<int>(q.outerStride());
    args.k = k.data(), args.ld_kv = static_cast<int>(k.outerStride());
    args.allowed = t.allowed.rows_at(r0, r1, ruled);
    args.factor = t.family.factor > 0 ? t.family.factor : t.scale.factor(t.d_k);
    args.softcap = t.family.softcap;
    if (!t.family.sinks.empty()) args.sink = t.family.sinks[static_cast<size_t>(head)];
    args.scaled = scaled;
    args.weights = weights;
    kernels::Context ctx;  // the best instruction set, as compute's: the rows the trace would hold
    kernels::attention_head(ctx, args);
}

const float* HeadRows::row(int q, bool scaled) {
    const HeadTrace& h = trace_.attention.heads[static_cast<size_t>(head_)];
    const Matrix& kept = scaled ? h.scaled : h.weights;
    if (q < kept.rows()) return kept.data() + static_cast<std::ptrdiff_t>(q) * kept.cols();
    const auto T_k = static_cast<size_t>(trace_.T_k());
    if (q < r0_ || q >= r1_) {
        r0_ = q, r1_ = std::min(q + block_, trace_.T_q());
        weights_.resize(static_cast<size_t>(r1_ - r0_) * T_k);
        scaled_.resize(weights_.size());
        attention_rows(trace_, head_, r0_, r1_, weights_.data(), scaled_.data());
    }
    return (scaled ? scaled_ : weights_).data() + static_cast<size_t>(q - r0_) * T_k;
}

CellValues cell_values(const Trace& t, int head, int q, int k) {
    const HeadTrace& h = t.attention.heads[static_cast<size_t>(head)];
    CellValues c;
    c.allowed = t.allowed(q, k) != 0;
    if (q < h.weights.rows()) {
        c.score = h.scores(q, k), c.scaled = h.scaled(q, k), c.weight = h.weights(q, k);
        return c;
    }
    c.score = head_queries(t, head).row(q).dot(head_keys(t, head).row(k));
    std::vector<float> weights(static_cast<size_t>(t.T_k())), scaled(weights.size());
    attention_rows(t, head, q, q + 1, weights.data(), scaled.data());
    c.scaled = scaled[static_cast<size_t>(k)];
    c.weight = weights[static_cast<size_t>(k)];
    return c;
}

std::size_t trace_bytes(const Trace& t) {
    auto bytes = [](const auto& m) { return static_cast<std::size_t>(m.size()) * sizeof(*m.data()); };
    std::size_t n = t.allowed.bytes() + bytes(t.attention.x_q) + bytes(t.attention.x_kv) +
                    bytes(t.attention.concat) + bytes(t.attention.output);
    for (const HeadTrace& h : t.attention.heads)
        n += bytes(h.q) + bytes(h.k) + bytes(h.v) + bytes(h.scores) + bytes(h.scaled) + bytes(h.weights) +
             bytes(h.output);
    for (const auto* shared : {&t.long_q, &t.long_k})  // a block's, where the trace shares it
        if (*shared) n += bytes(**shared);
    const FamilyTrace& f = t.family;
    for (const auto* heads : {&f.q_projected, &f.k_projected, &f.q_normed, &f.k_normed, &f.q_unrotated, &f.k_unrotated})
        for (const Matrix& m : *heads) n += bytes(m);
    return n + bytes(f.rope_angle) + bytes(f.rope_cos) + bytes(f.rope_sin) + bytes(f.patch_pixels) + bytes(f.patch_weight) + bytes(f.patch_embedded);
}

}  // namespace attn
