// attention_file.cpp: imported attention from a .safetensors file (attention_file.hpp).
#include "attention_file.hpp"

#include "files.hpp"
#include "safetensors.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>

namespace attn {

namespace {

constexpr std::array<const char*, 4> kStacks = {"attention", "encoder_attention", "decoder_attention", "cross_attention"};

std::vector<std::string> metadata_tokens(const SafetensorsHeader& h, const std::string& key, const std::string& needed_by) {
    auto it = h.metadata.find(key);
    if (it == h.metadata.end()) throw SceneError(key, "missing from the metadata (" + needed_by + " needs it)");
    nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
    if (!j.is_array() || j.empty()) throw SceneError(key, "expected a JSON array of token strings in the metadata");
    if (j.size() > static_cast<size_t>(kMaxImportTokens))
        throw SceneError(key, "expected at most " + std::to_string(kMaxImportTokens) + " tokens, got " + std::to_string(j.size()));
    std::vector<std::string> tokens;
    for (size_t i = 0; i < j.size(); ++i) {
        if (!j[i].is_string()) throw SceneError(key + "[" + std::to_string(i) + "]", "expected a string");
        tokens.push_back(j[i].get<std::string>());
    }
    return tokens;
}

// pass 1: the shape [layers, heads, T_q, T_k] against the tokens and the limits
// pass 2: each map converted to F32, each row checked as the JSON reader checks it
AttentionStack read_stack(const FileBytes& f, const TensorInfo& t, const std::string& name, std::vector<std::string> queries,
                          std::vector<std::string> keys, long long& budget) {
    const auto& s = t.shape;
    if (!is_float_weight(t.dtype))
        throw SceneError(name, std::string("expected F16, BF16 or F32 weights, got ") + dtype_name(t.dtype));
    if (s.size() != 4 || s[0] < 1 || s[1] < 1 ||
        s[2] != static_cast<std::int64_t>(queries.size()) || s[3] != static_cast<std::int64_t>(keys.size()))
        throw SceneError(name, "expected shape [layers, heads, " + std::to_string(queries.size()) + ", " +
                                   std::to_string(keys.size()) + "] (the tokens), got " + shape_text(s));
    if (s[0] > kMaxImportLayers || s[1] > kMaxImportHeads)
        throw SceneError(name, "expected at most " + std::to_string(kMaxImportLayers) + " layers and " +
                                   std::to_string(kMaxImportHeads) + " heads, got " + shape_text(s));
    if (t.elements() > budget)
        throw SceneError(name, shape_text(s) + " is more than the " + std::to_string(kMaxImportValues) +
                                   " numbers an import may hold in all");
    budget -= t.elements();

    AttentionStack stack;
    stack.name = name;
    stack.queries = std::move(queries);
    stack.keys = std::move(keys);
    stack.layers = static_cast<int>(s[0]);
    stack.heads = static_cast<int>(s[1]);
    const auto T_q = static_cast<Eigen::Index>(s[2]), T_k = static_cast<Eigen::Index>(s[3]);
    const std::size_t map_bytes = static_cast<std::size_t>(T_q * T_k) * dtype_bytes(t.dtype);
    TensorInfo one = t;  // one map at a time: [T_q, T_k]
    one.shape = {s[2], s[3]};
    for (int m = 0; m < stack.layers * stack.heads; ++m) {
        one.begin = t.begin + static_cast<std::size_t>(m) * map_bytes;
        one.end = one.begin + map_bytes;
        Matrix map(T_q, T_k);
        convert_to_f32(f.data(), one, map.data());
        const std::string field = name + "[" + std::to_string(m / stack.heads) + "][" + std::to_string(m % stack.heads) + "]";
        for (Eigen::Index r = 0; r < T_q; ++r)
            check_import_row(field + "[" + std::to_string(r) + "]", map.data() + r * T_k, static_cast<size_t>(T_k));
        stack.maps.push_back(std::move(map));
    }
    return stack;
}

}  // namespace

ImportedAttention read_import_safetensors(std::string_view bytes, const std::string& file) {
    const auto f = FileBytes::borrow(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    const SafetensorsHeader h = read_safetensors_header(*f, file);
    for (const auto& [name, t] : h.tensors)
        if (std::find(kStacks.begin(), kStacks.end(), name) == kStacks.end())
            throw SceneError(name, "unknown tensor (expected attention, or encoder_attention, decoder_attention and "
                                   "cross_attention)");
    ImportedAttention result;
    if (auto it = h.metadata.find("model"); it != h.metadata.end()) result.model = it->second;
    long long budget = kMaxImportValues;
    auto tensor = [&](const char* name) { auto it = h.tensors.find(name); return it == h.tensors.end() ? nullptr : &it->second; };
    if (const TensorInfo* t = tensor("attention")) {
        if (h.tensors.size() > 1)
            throw SceneError("attention", "not allowed with the encoder-decoder tensors (a file holds one model)");
        auto tokens = metadata_tokens(h, "tokens", "attention");
        result.stacks.push_back(read_stack(*f, *t, "attention", tokens, tokens, budget));
        return result;
    }
    if (h.tensors.empty()) throw SceneError("(top level)", "no attention tensor (expected attention, or encoder_attention, "
                                                           "decoder_attention and cross_attention)");
    const TensorInfo *enc = tensor("encoder_attention"), *dec = tensor("decoder_attention"), *cross = tensor("cross_attention");
    std::vector<std::string> encoder, decoder;
    if (enc || cross) encoder = metadata_tokens(h, "encoder_tokens", enc ? "encoder_attention" : "cross_attention");
    if (dec || cross) decoder = metadata_tokens(h, "decoder_tokens", dec ? "decoder_attention" : "cross_attention");
    if (enc) result.stacks.push_back(read_stack(*f, *enc, "encoder_attention", encoder, encoder, budget));
    if (dec) result.stacks.push_back(read_stack(*f, *dec, "decoder_attention", decoder, decoder, budget));
    if (cross) result.stacks.push_back(read_stack(*f, *cross, "cross_attention", decoder, encoder, budget));
    return result;
}

ImportedAttention read_import_file(std::string_view bytes, const std::string& file) {
    return is_safetensors(bytes) ? read_import_safetensors(bytes, file) : read_import(bytes);
}

}  // namespace attn
