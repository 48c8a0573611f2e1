// fuzz_safetensors.cpp: libFuzzer target for the checkpoint reader. Any bytes as a
// model.safetensors of a tiny GPT-2 (vocab 8, d_model 4, 2 heads, 1 layer, 4 positions): either
// a ModelError, or a header whose every tensor lies inside the file without overlaps, and a model
// that runs. Nothing else may escape, nothing may read outside the file.
//
// Invariants, for every input:
//   1. read_safetensors_header: each tensor's [begin, end) is inside the file, after the
//      header, holds elements × dtype bytes, and the tensors tile the data section;
//   2. every F32/F16/BF16 tensor converts (ASan sees every byte read);
//   3. load_model_weights either throws ModelError or gives a model whose forward over 3 ids
//      and KV-cache decoder run, the attention's weights in [0, 1], each row summing to 1, or to
//      0 when every score of the row is NaN (the kernels' rule; NaN or huge weights in the file).
#include "safetensors.hpp"
#include "transformer.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

void require(bool ok) {
    if (!ok) __builtin_trap();
}

constexpr const char* kConfig =
    R"({"model_type":"gpt2","vocab_size":8,"n_embd":4,"n_layer":1,"n_head":2,"n_positions":4,"n_inner":8})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    attn::SafetensorsHeader h;
    try {
        h = attn::read_safetensors_header(*attn::FileBytes::borrow(data, size), "fuzz/model.safetensors");
    } catch (const attn::ModelError&) {
        return 0;
    }
    std::size_t covered = 0;
    require(h.data_begin >= 8 && h.data_begin <= size);
    for (const auto& [name, t] : h.tensors) {
        require(t.begin >= h.data_begin && t.begin <= t.end && t.end <= size);
        require(t.end - t.begin == static_cast<std::size_t>(t.elements()) * attn::dtype_bytes(t.dtype));
        covered += t.end - t.begin;
        if (attn::is_float_weight(t.dtype) && t.elements() <= (1 << 20)) {
            std::vector<float> out(static_cast<std::size_t>(t.elements()));
            attn::convert_to_f32(data, t, out.data());
        }
    }
    require(covered == size - h.data_begin);

    attn::Model model;
    try {
        model = attn::load_model_weights(attn::read_config(kConfig, "fuzz/config.json"), attn::FileBytes::own(attn::ByteBuffer(data, size)),
                                         "fuzz/model.safetensors");
    } catch (const attn::ModelError&) {
        return 0;
    }
    attn::kernels::Context ctx;
    const attn::RunResult run = attn::forward(ctx, model, {{1, 7, 0}, {}});
    require(run.logits.size() == 8 && run.hidden.rows() == 3);
    for (const attn::BlockRun& b : run.stacks.at(0).layers)
        for (const attn::Matrix& w : b.weights) {
            require(w.allFinite() && w.minCoeff() >= 0.0f && w.maxCoeff() <= 1.0f);
            for (Eigen::Index i = 0; i < w.rows(); ++i) {  // a row of NaN scores (NaN weights in the file) is all 0
                const float sum = w.row(i).sum();
                require(std::fabs(sum - 1.0f) < 1e-3f || sum == 0.0f);
            }
        }
    attn::Decoder dec(model);
    for (int id : {1, 7, 0}) require(dec.step(ctx, id).size() == 8);
    return 0;
}
