// model_checkpoint.hpp: small checkpoints written in memory for the model tests and the
// benchmark: a safetensors writer (F32, F16, BF16, or any dtype's raw bytes) and random GPT-2,
// BERT and Marian weights under Hugging Face's names.
#pragma once

#include "oracle.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace attn::checkpoint {

struct Tensor {
    std::string name;
    std::vector<std::int64_t> shape;
    std::vector<float> values;   // converted to `dtype` when written
    std::string dtype = "F32";   // F32, F16, BF16; any other: `raw` is written as it is
    std::vector<std::uint8_t> raw;
};

inline std::uint16_t to_bf16(float f) {  // round to nearest even
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return static_cast<std::uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

inline std::uint16_t to_f16(float f) {  // round to nearest, normal range and subnormals
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    const std::uint32_t sign = (b >> 16) & 0x8000u;
    const float a = std::fabs(f);
    if (a >= 65520.0f) return static_cast<std::uint16_t>(sign | 0x7C00u);
    if (a < 6.103515625e-05f) return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(a * 16777216.0f)));
    std::uint32_t ab = b & 0x7FFFFFFFu;
    ab += 0xFFFu + ((ab >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | ((ab - (112u << 23)) >> 13));
}

// The bytes of a .safetensors file holding `tensors` in order; `metadata` the members of its
// "__metadata__" object, as JSON text ("\"tokens\":\"[…]\"").
inline std::vector<std::uint8_t> safetensors(const std::vector<Tensor>& tensors, const std::string& metadata = "\"format\":\"pt\"") {
    std::vector<std::uint8_t> data;
    std::string header = "{";
    for (const Tensor& t : tensors) {
        const std::size_t begin = data.size();
        if (t.dtype == "F32") {
            data.resize(begin + t.values.size() * 4);
            std::memcpy(data.data() + begin, t.values.data(), t.values.size() * 4);
        } else if (t.dtype == "F16" || t.dtype == "BF16") {
            for (float v : t.values) {
                const std::uint16_t h = t.dtype == "F16" ? to_f16(v) : to_bf16(v);
                data.push_back(static_cast<std::uint8_t>(h & 0xFF)), data.push_back(static_cast<std::uint8_t>(h >> 8));
            }
        } else {
            data.insert(data.end(), t.raw.begin(), t.raw.end());
        }
        std::string shape;
        for (std::size_t i = 0; i < t.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(t.shape[i]);
        header += std::string(header.size() > 1 ? "," : "") + "\"" + t.name + "\":{\"dtype\":\"" + t.dtype +
                  "\",\"shape\":[" + shape + "],\"data_offsets\":[" + std::to_string(begin) + "," +
                  std::to_string(data.size()) + "]}";
    }
    header += std::string(header.size() > 1 ? "," : "") + "\"__metadata__\":{" + metadata + "}}";
    while (header.size() % 8) header += ' ';
    std::vector<std::uint8_t> out(8);
    std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(n >> (8 * i));
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

// Random weights of a shape: uniform in [-scale, scale); LayerNorm gains around 1.
struct Maker {
    oracle::Random rng;
    std::vector<Tensor> tensors;
    explicit Maker(std::uint64_t seed) : rng(seed) {}
    void add(const std::string& name, std::vector<std::int64_t> shape, float scale, float offset = 0) {
        std::int64_t n = 1;
        for (std::int64_t s : shape) n *= s;
        Tensor t{name, shape, std::vector<float>(static_cast<std::size_t>(n)), "F32", {}};
        for (float& v : t.values) v = offset + scale * rng.uniform();
        tensors.push_back(std::move(t));
    }
    void norm(const std::string& name, std::int64_t d) {
        add(name + ".weight", {d}, 0.2f, 1.0f);
        add(name + ".bias", {d}, 0.1f);
    }
    void linear(const std::string& name, std::int64_t in, std::int64_t out) {  // nn.Linear
        add(name + ".weight", {out, in}, 1.0f / std::sqrt(static_cast<float>(in)) * 1.7f);
        add(name + ".bias", {out}, 0.1f);
    }
    void conv1d(const std::string& name, std::int64_t in, std::int64_t out) {  // GPT-2's Conv1D
        add(name + ".weight", {in, out}, 1.0f / std::sqrt(static_cast<float>(in)) * 1.7f);
        add(name + ".bias", {out}, 0.1f);
    }
};

struct Gpt2Shape {
    int vocab = 50, d = 16, heads = 4, layers = 2, positions = 32, d_ff = 64;
};

inline std::string gpt2_config(const Gpt2Shape& s, const std::string& activation = "gelu_new") {
    return "{\"model_type\":\"gpt2\",\"vocab_size\":" + std::to_string(s.vocab) + ",\"n_embd\":" + std::to_string(s.d) +
           ",\"n_layer\":" + std::to_string(s.layers) + ",\"n_head\":" + std::to_string(s.heads) +
           ",\"n_positions\":" + std::to_string(s.positions) + ",\"n_inner\":" +
           (s.d_ff == 4 * s.d ? std::string("null") : std::to_string(s.d_ff)) + ",\"activation_function\":\"" +
           activation + "\",\"layer_norm_epsilon\":1e-05,\"bos_token_id\":0,\"eos_token_id\":1}";
}

// prefix "" or "transformer."; with_buffers adds attn.bias (BOOL) and attn.masked_bias (F32).
inline std::vector<Tensor> gpt2_tensors(const Gpt2Shape& s, std::uint64_t seed, const std::string& prefix = "",
                                        bool with_buffers = false) {
    Maker m(seed);
    const std::string p = prefix;
    m.add(p + "wte.weight", {s.vocab, s.d}, 1.0f);
    m.add(p + "wpe.weight", {s.positions, s.d}, 0.5f);
    for (int i = 0; i < s.layers; ++i) {
        const std::string h = p + "h." + std::to_string(i) + ".";
        m.norm(h + "ln_1", s.d);
        m.conv1d(h + "attn.c_attn", s.d, 3 * s.d);
        m.conv1d(h + "attn.c_proj", s.d, s.d);
        m.norm(h + "ln_2", s.d);
        m.conv1d(h + "mlp.c_fc", s.d, s.d_ff);
        m.conv1d(h + "mlp.c_proj", s.d_ff, s.d);
        if (with_buffers) {
            Tensor bias{h + "attn.bias", {1, 1, s.positions, s.positions}, {}, "BOOL", {}};
            bias.raw.assign(static_cast<std::size_t>(s.positions) * s.positions, 1);
            m.tensors.push_back(bias);
            m.tensors.push_back({h + "attn.masked_bias", {}, {-1e4f}, "F32", {}});  // no draw: the weights stay as without buffers
        }
    }
    m.norm(p + "ln_f", s.d);
    return m.tensors;
}

struct Seq2SeqShape {  // bert uses vocab, d, heads, layers, positions, d_ff
    int vocab = 40, d = 16, heads = 4, layers = 2, positions = 24, d_ff = 32, decoder_layers = 3, decoder_heads = 2,
        decoder_ff = 24;
};

inline std::string bert_config(const Seq2SeqShape& s) {
    return "{\"model_type\":\"bert\",\"vocab_size\":" + std::to_string(s.vocab) + ",\"hidden_size\":" + std::to_string(s.d) +
           ",\"num_hidden_layers\":" + std::to_string(s.layers) + ",\"num_attention_heads\":" + std::to_string(s.heads) +
           ",\"intermediate_size\":" + std::to_string(s.d_ff) + ",\"hidden_act\":\"gelu\",\"max_position_embeddings\":" +
           std::to_string(s.positions) + ",\"type_vocab_size\":2,\"layer_norm_eps\":1e-12,\"pad_token_id\":0}";
}

inline std::vector<Tensor> bert_tensors(const Seq2SeqShape& s, std::uint64_t seed, const std::string& prefix = "") {
    Maker m(seed);
    const std::string p = prefix;
    m.add(p + "embeddings.word_embeddings.weight", {s.vocab, s.d}, 1.0f);
    m.add(p + "embeddings.position_embeddings.weight", {s.positions, s.d}, 0.5f);
    m.add(p + "embeddings.token_type_embeddings.weight", {2, s.d}, 0.5f);
    m.norm(p + "embeddings.LayerNorm", s.d);
    for (int i = 0; i < s.layers; ++i) {
        const std::string e = p + "encoder.layer." + std::to_string(i) + ".";
        m.linear(e + "attention.self.query", s.d, s.d);
        m.linear(e + "attention.self.key", s.d, s.d);
        m.linear(e + "attention.self.value", s.d, s.d);
        m.linear(e + "attention.output.dense", s.d, s.d);
        m.norm(e + "attention.output.LayerNorm", s.d);
        m.linear(e + "intermediate.dense", s.d, s.d_ff);
        m.linear(e + "output.dense", s.d_ff, s.d);
        m.norm(e + "output.LayerNorm", s.d);
    }
    return m.tensors;
}

inline std::string marian_config(const Seq2SeqShape& s) {
    return "{\"model_type\":\"marian\",\"vocab_size\":" + std::to_string(s.vocab) + ",\"d_model\":" + std::to_string(s.d) +
           ",\"encoder_layers\":" + std::to_string(s.layers) + ",\"encoder_attention_heads\":" + std::to_string(s.heads) +
           ",\"encoder_ffn_dim\":" + std::to_string(s.d_ff) + ",\"decoder_layers\":" + std::to_string(s.decoder_layers) +
           ",\"decoder_attention_heads\":" + std::to_string(s.decoder_heads) + ",\"decoder_ffn_dim\":" +
           std::to_string(s.decoder_ff) + ",\"activation_function\":\"swish\",\"max_position_embeddings\":" +
           std::to_string(s.positions) + ",\"scale_embedding\":true,\"pad_token_id\":" + std::to_string(s.vocab - 1) +
           ",\"eos_token_id\":0,\"decoder_start_token_id\":" + std::to_string(s.vocab - 1) + "}";
}

// prefix "model." (MarianMTModel, with final_logits_bias) or "" (MarianModel).
inline std::vector<Tensor> marian_tensors(const Seq2SeqShape& s, std::uint64_t seed, const std::string& prefix = "model.") {
    Maker m(seed);
    const std::string p = prefix;
    m.add(p + "shared.weight", {s.vocab, s.d}, 0.5f);
    auto attention = [&](const std::string& n) {
        for (const char* proj : {"k_proj", "v_proj", "q_proj", "out_proj"}) m.linear(n + "." + proj, s.d, s.d);
    };
    for (int i = 0; i < s.layers; ++i) {
        const std::string e = p + "encoder.layers." + std::to_string(i) + ".";
        attention(e + "self_attn");
        m.norm(e + "self_attn_layer_norm", s.d);
        m.linear(e + "fc1", s.d, s.d_ff);
        m.linear(e + "fc2", s.d_ff, s.d);
        m.norm(e + "final_layer_norm", s.d);
    }
    for (int i = 0; i < s.decoder_layers; ++i) {
        const std::string e = p + "decoder.layers." + std::to_string(i) + ".";
        attention(e + "self_attn");
        m.norm(e + "self_attn_layer_norm", s.d);
        attention(e + "encoder_attn");
        m.norm(e + "encoder_attn_layer_norm", s.d);
        m.linear(e + "fc1", s.d, s.decoder_ff);
        m.linear(e + "fc2", s.decoder_ff, s.d);
        m.norm(e + "final_layer_norm", s.d);
    }
    if (!prefix.empty()) m.add("final_logits_bias", {1, s.vocab}, 0.5f);
    return m.tensors;
}

}  // namespace attn::checkpoint
