// fuzz_config.cpp: libFuzzer target for read_config. Any bytes as a config.json: a ModelError,
// or a configuration the runtime can size (every count positive, a positive head size — heads
// dividing d_model where the family has no head_dim —, a family attnviz runs, token ids -1 or
// ≥ 0, activation_bytes defined).
#include "config.hpp"
#include "family.hpp"
#include "files.hpp"
#include "transformer.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

void require(bool ok) {
    if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    attn::ModelConfig c;
    try {
        c = attn::read_config(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz/config.json");
    } catch (const attn::ModelError& e) {
        require(std::string_view(e.what()).starts_with("fuzz/config.json: "));
        return 0;
    }
    require(c.vocab_size > 0 && c.d_model > 0 && c.n_layers > 0 && c.n_heads > 0 && c.d_ff > 0 && c.max_positions > 0);
    require(c.d_head() > 0 && (c.head_dim > 0 || c.d_model % c.n_heads == 0) && c.layer_norm_eps > 0);
    require(attn::find_family(c.model_type) != nullptr);  // every family the runtime has, not only the first three
    if (c.family == attn::Family::Marian)
        require(c.decoder_layers > 0 && c.decoder_heads > 0 && c.d_model % c.decoder_heads == 0 && c.decoder_ff > 0);
    for (int id : {c.pad_id, c.bos_id, c.eos_id, c.decoder_start_id}) require(id >= -1);
    attn::Model m{c, nullptr};
    (void)m.activation_bytes(16);
    require(m.parameters() == 0);
    return 0;
}
