// fuzz_gguf.cpp: libFuzzer target for GGUF files (gguf.hpp). Any bytes as a model.gguf: either a
// ModelError naming the file, or a file whose every tensor lies inside it without overlaps, a
// model attnviz can size, a tokenizer.json it reads, and (when small) a model that loads and runs.
//
// Invariants, for every input:
//   1. read_gguf: each readable tensor's [begin, end) is inside the file, after the header, and
//      holds its blocks; no two overlap;
//   2. gguf_model: a configuration with positive sizes whose tensors are among the file's;
//   3. gguf_tokenizer_json: JSON read_tokenizer_json accepts or refuses with a ModelError;
//   4. a model of at most 2^16 parameters per tensor loads (the loader reads, dequantizes and
//      unpairs every tensor it names) and runs one token, its attention weights in [0, 1].
// Seeds: tests/fuzz/corpus/gguf (tests/model/gguf_files.py writes them: python3 gguf_files.py DIR).
#include "gguf.hpp"
#include "model.hpp"
#include "tokenizer.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

void require(bool ok) {
    if (!ok) __builtin_trap();
}

constexpr const char* kFile = "fuzz/model.gguf";

bool named(const attn::ModelError& e) { return std::string_view(e.what()).starts_with("fuzz/model.gguf"); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto bytes = attn::FileBytes::own(attn::ByteBuffer(data, size));
    attn::GgufFile g;
    try {
        g = attn::read_gguf(*bytes, kFile);
    } catch (const attn::ModelError& e) {
        require(named(e));
        return 0;
    }
    for (const attn::GgufTensor& t : g.tensors) {
        if (!t.format) continue;
        require(t.begin >= g.data_begin && t.begin <= t.end && t.end <= size);
        for (const attn::GgufTensor& u : g.tensors)
            require(&u == &t || !u.format || u.end <= t.begin || t.end <= u.begin || u.begin == u.end || t.begin == t.end);
    }
    attn::GgufModel m;
    try {
        m = attn::gguf_model(g, *bytes);
    } catch (const attn::ModelError& e) {
        require(named(e));
        return 0;
    }
    const attn::ModelConfig& c = m.config;
    require(c.vocab_size > 0 && c.d_model > 0 && c.n_layers > 0 && c.n_heads > 0 && c.d_ff > 0);
    for (const auto& [name, info] : m.tensors.tensors) require(info.begin >= g.data_begin && info.end <= size);
    try {
        attn::read_tokenizer_json(attn::gguf_tokenizer_json(g), kFile);
    } catch (const attn::ModelError& e) {
        return 0;  // the tokenizer's messages name the file as given
    }
    for (const auto& [name, info] : m.tensors.tensors)
        if (info.elements() > (1 << 16)) return 0;
    if (static_cast<std::int64_t>(c.n_layers) * c.d_model > (1 << 12)) return 0;
    attn::ModelFiles files;
    files.folder = "fuzz";
    files.files["model.gguf"] = bytes;
    try {
        const attn::LoadedModel loaded = attn::load_model(files);
        attn::kernels::Context ctx;
        const attn::RunResult run = attn::forward(ctx, loaded.model, {{0}, {}});
        for (const attn::BlockRun& b : run.stacks.at(0).layers)
            for (const attn::Matrix& w : b.weights) require(w.allFinite() && w.minCoeff() >= 0.0f && w.maxCoeff() <= 1.0f);
    } catch (const attn::ModelError& e) {
        require(named(e) || std::string_view(e.what()).starts_with("fuzz/"));
    }
    return 0;
}
