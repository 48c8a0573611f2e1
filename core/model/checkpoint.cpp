// checkpoint.cpp: a checkpoint's tensors, from one file or from the shards of an index, and the
// plan a family states its tensors with (family.hpp).
//
// [SECTION] A checkpoint: one file or shards
// [SECTION] The plan
#include "family.hpp"
#include "gguf.hpp"
#include "quants.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

namespace attn {

// [SECTION] A checkpoint: one file or shards -------------------------------------------------

const Checkpoint::Tensor* Checkpoint::find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
}

Checkpoint Checkpoint::one_file(std::shared_ptr<const FileBytes> bytes, std::string shown) {
    Checkpoint c;
    c.file = shown;
    SafetensorsHeader header = read_safetensors_header(*bytes, shown);
    std::string name = shown.substr(shown.find_last_of('/') == std::string::npos ? 0 : shown.find_last_of('/') + 1);
    c.shards.push_back({std::move(bytes), std::move(name), std::move(shown), std::move(header)});
    for (const auto& [name, info] : c.shards[0].header.tensors) c.tensors.emplace(name, Tensor{&info, 0});
    return c;
}

void Checkpoint::rename(const std::string& from, const std::string& to) {
    for (auto it = tensors.lower_bound(from); it != tensors.end() && it->first.starts_with(from);) {
        const std::string name = to + it->first.substr(from.size());
        file_names[name] = named(it->first);
        tensors.emplace(name, it->second);
        it = tensors.erase(it);
    }
}

std::string Checkpoint::named(const std::string& name) const {
    auto it = file_names.find(name);
    return it == file_names.end() ? name : it->second;
}

// model.safetensors.index.json: {"metadata": {…}, "weight_map": {"TENSOR": "SHARD FILE", …}}.
// Every shard it names must be among the files, and hold the tensors it is named for. A GGUF
// file: its tensors under transformers' names (gguf_model).
Checkpoint Checkpoint::from_files(const ModelFiles& files) {
    constexpr const char* kIndex = "model.safetensors.index.json";
    if (const std::string g = files.gguf(); !g.empty()) {
        Checkpoint c;
        c.file = files.shown(g);
        std::shared_ptr<const FileBytes> bytes = files.share(g);
        GgufModel m = gguf_model(read_gguf(*bytes, c.file), *bytes);
        c.file_names = std::move(m.file_names);
        c.shards.push_back({std::move(bytes), g, c.file, std::move(m.tensors)});
        for (const auto& [name, info] : c.shards[0].header.tensors) c.tensors.emplace(name, Tensor{&info, 0});
        return c;
    }
    if (!files.find(kIndex)) return one_file(files.share("model.safetensors"), files.shown("model.safetensors"));
    Checkpoint c;
    c.file = files.shown(kIndex);
    const nlohmann::json j = nlohmann::json::parse(files.need(kIndex).text(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw ModelError(c.file, "", "not a JSON object");
    const auto map = j.find("weight_map");
    if (map == j.end() || !map->is_object() || map->empty()) throw ModelError(c.file, "weight_map", "expected an object of tensor: shard file");
    std::map<std::string, int> shard_of;  // shard file -> index in c.shards
    c.shards.reserve(map->size());
    for (const auto& [tensor, shard] : map->items()) {
        if (!shard.is_string()) throw ModelError(c.file, "weight_map." + tensor, "expected a shard's file name");
        const std::string name = shard.get<std::string>();
        if (!shard_of.count(name)) {
            if (!files.find(name)) throw ModelError(c.file, "weight_map." + tensor, "its shard " + name + " is missing");
            std::shared_ptr<const FileBytes> bytes = files.share(name);
            SafetensorsHeader header = read_safetensors_header(*bytes, files.shown(name));
            shard_of[name] = static_cast<int>(c.shards.size());
            c.shards.push_back({std::move(bytes), name, files.shown(name), std::move(header)});
        }
    }
    // Tensors are found through the shards' own headers, which c.shards (reserved) keeps in place.
    for (const auto& [tensor, shard] : map->items()) {
        const int s = shard_of.at(shard.get<std::string>());
        const auto& in = c.shards[s].header.tensors;
        auto it = in.find(tensor);
        if (it == in.end()) throw ModelError(c.shards[s].shown, tensor, "missing (" + std::string(kIndex) + " names it in this shard)");
        c.tensors.emplace(tensor, Tensor{&it->second, s});
    }
    return c;
}

// [SECTION] The plan -------------------------------------------------------------------------

std::vector<std::int64_t> Plan::shape(const std::string& name, bool prefixed) const {
    const Checkpoint::Tensor* t = checkpoint_.find(full(name, prefixed));
    return t ? t->info->shape : std::vector<std::int64_t>{};
}

float* Plan::need(const std::string& name, std::vector<std::int64_t> shape, bool prefixed) {
    return required(name, shape, prefixed, true);
}

kernels::PackedB Plan::table(const std::string& name, int V, int d, bool prefixed) {
    return packed(packed_weight(name, {V, d}, prefixed), 0, d, true, d, V, nullptr).w;
}

float* Plan::maybe(const std::string& name, std::vector<std::int64_t> shape, bool prefixed) {
    const std::string full = this->full(name, prefixed);
    const Checkpoint::Tensor* t = checkpoint_.find(full);
    return t ? place(full, *t, shape) : nullptr;
}

float* Plan::computed(std::size_t n) {
    w_.storage.emplace_back(new float[n]);
    w_.bytes += n * sizeof(float);
    return w_.storage.back().get();
}

Norm Plan::layer_norm(const std::string& name, int d) { return {need(name + ".weight", {d}), need(name + ".bias", {d})}; }

Norm Plan::rms_norm(const std::string& name, int d, float add, bool prefixed) {
    Norm n{need(name + ".weight", {d}, prefixed), nullptr};
    conversions.back().add = add - conversions.back().tensor.info->stored_add;  // a GGUF's Gemma norms hold 1 + w
    return n;
}

Linear Plan::linear(const std::string& name, int in, int out, Bias bias, bool prefixed) {
    return linear_parts(name, in, {out}, bias, prefixed)[0];
}

std::vector<Linear> Plan::linear_parts(const std::string& name, int in, const std::vector<int>& parts, Bias bias, bool prefixed) {
    int out = 0;
    for (int n : parts) out += n;
    const std::size_t weight = packed_weight(name + ".weight", {out, in}, prefixed);
    const float* b = bias == Bias::Required ? need(name + ".bias", {out}, prefixed) : nullptr;
    std::vector<Linear> l;
    int row = 0;
    for (int n : parts) {
        l.push_back(packed(weight, static_cast<std::ptrdiff_t>(row) * in, in, true, in, n, b ? b + row : nullptr));
        row += n;
    }
    return l;
}

Linear Plan::matrix(const std::string& name, int in, int out, bool prefixed) {
    return packed(packed_weight(name, {in, out}, prefixed), 0, out, false, in, out, nullptr);
}

Linear Plan::patch_embedding(const std::string& name, int channels, int size, int out, Bias bias, int frames) {
    const int in = channels * frames * size * size;
    const std::size_t weight =
        packed_weight(name + ".weight", frames > 1 ? std::vector<std::int64_t>{out, channels, frames, size, size} : std::vector<std::int64_t>{out, channels, size, size});
    return packed(weight, 0, in, true, in, out, bias == Bias::Required ? need(name + ".bias", {out}) : nullptr);
}

std::vector<Linear> Plan::conv1d(const std::string& name, int in, int out, int parts) {
    if (const Checkpoint::Tensor* t = checkpoint_.find(full(name + ".weight")); t && t->info->linear_layout)  // a GGUF's GPT-2
        return linear_parts(name, in, std::vector<int>(static_cast<std::size_t>(parts), out / parts), Bias::Required);
    const std::size_t weight = packed_weight(name + ".weight", {in, out});
    const float* b = need(name + ".bias", {out});
    const int n = out / parts;
    std::vector<Linear> l;
    for (int k = 0; k < parts; ++k) l.push_back(packed(weight, k * n, out, false, in, n, b + k * n));
    return l;
}

std::vector<Linear> Plan::bank(const std::string& name, int n, int in, int out) {
    const std::size_t weight = packed_weight(name, {n, in, out});
    const float* b = need(name + "_bias", {n, out});
    std::vector<Linear> l;
    for (int e = 0; e < n; ++e)
        l.push_back(packed(weight, static_cast<std::ptrdiff_t>(e) * in * out, out, false, in, out, b + static_cast<std::ptrdiff_t>(e) * out));
    return l;
}

std::vector<Linear> Plan::mxfp4_bank(const std::string& name, int n, int in, int out) {
    if (in % 32) throw ModelError(checkpoint_.file, full(name + "_blocks"), "MXFP4 needs the input size in whole groups of 32, got " + std::to_string(in));
    const auto raw_tensor = [&](const std::string& tensor, const std::vector<std::int64_t>& shape) {
        const std::string f = full(tensor);
        const Checkpoint::Tensor* t = checkpoint_.find(f);
        if (!t) throw ModelError(checkpoint_.file, f, "missing");
        const std::string& file = checkpoint_.shards[t->shard].shown;
        if (t->info->dtype != Dtype::U8) throw ModelError(file, f, std::string("dtype ") + dtype_name(t->info->dtype) + " is not U8 (MXFP4)");
        if (t->info->shape != shape) throw ModelError(file, f, "expected shape " + shape_text(shape) + ", got " + shape_text(t->info->shape));
        raw.emplace_back(new std::uint8_t[static_cast<std::size_t>(t->info->elements())]);
        w_.file_bytes[Dtype::U8] += t->info->end - t->info->begin;
        conversions.push_back({*t, nullptr, 0, raw.back().get()});
        return conversions.size() - 1;
    };
    const std::size_t blocks = raw_tensor(name + "_blocks", {n, out, in / 32, 16});
    const std::size_t scales = raw_tensor(name + "_scales", {n, out, in / 32});
    const float* b = need(name + "_bias", {n, out});
    w_.parameters += static_cast<std::int64_t>(n) * in * out;
    w_.mxfp4 = true;
    std::vector<Linear> l;
    const kernels::Isa isa = kernels::best_isa();
    for (int e = 0; e < n; ++e) {
        const std::size_t size = kernels::packed_size(isa, in, out);
        w_.storage16.emplace_back(new std::uint16_t[size]);
        w_.bytes += size * sizeof(std::uint16_t);
        mxfp4.push_back({blocks, scales, e, in, out, isa, w_.storage16.back().get()});
        l.push_back({kernels::PackedB{isa, kernels::Precision::BF16, in, out, w_.storage16.back().get()},
                     b + static_cast<std::ptrdiff_t>(e) * out});
    }
    return l;
}

// Dequantized exactly to BF16 as W [out, in] and packed as nn.Linear's weight is.
void pack_mxfp4(const Mxfp4Packing& m, const std::vector<Conversion>& conversions) {
    constexpr float kE2M1[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
    const int groups = m.in / 32;
    const std::size_t n = static_cast<std::size_t>(m.out) * m.in;
    const std::uint8_t* blocks = conversions[m.blocks].raw + static_cast<std::size_t>(m.index) * n / 2;
    const std::uint8_t* scales = conversions[m.scales].raw + static_cast<std::size_t>(m.index) * m.out * groups;
    std::vector<std::uint16_t> w(n);
    for (int o = 0; o < m.out; ++o)
        for (int g = 0; g < groups; ++g) {
            const float scale = std::ldexp(1.0f, static_cast<int>(scales[static_cast<std::size_t>(o) * groups + g]) - 127);
            const std::uint8_t* b = blocks + (static_cast<std::size_t>(o) * groups + g) * 16;
            std::uint16_t* row = w.data() + static_cast<std::size_t>(o) * m.in + g * 32;
            for (int i = 0; i < 16; ++i)
                for (int half = 0; half < 2; ++half) {
                    const float x = kE2M1[half ? b[i] >> 4 : b[i] & 0x0F] * scale;
                    std::uint32_t bits;
                    std::memcpy(&bits, &x, sizeof bits);
                    row[2 * i + half] = static_cast<std::uint16_t>(bits >> 16);  // exact: E2M1 needs 2 bits of mantissa
                }
        }
    kernels::pack_columns(m.isa, kernels::Precision::BF16, m.in, m.out, 0, m.out,
                          reinterpret_cast<const std::uint8_t*>(w.data()), m.in, true, m.to);
}

// A required Linear weight, checked: its conversion's index (no F32 place: it is packed).
std::size_t Plan::packed_weight(const std::string& name, std::vector<std::int64_t> shape, bool prefixed) {
    required(name, shape, prefixed, false);
    return conversions.size() - 1;
}

// A Linear packed for the best instruction set (kernels::pack_columns, a BF16 or F16 tensor kept
// 16-bit): in×out from `offset`, rows ld apart, or transposed.
Linear Plan::packed(std::size_t weight, std::ptrdiff_t offset, int ld, bool transposed, int in, int out, const float* b) {
    const kernels::Isa isa = kernels::best_isa();
    const std::size_t n = kernels::packed_size(isa, in, out);
    const Dtype dtype = conversions[weight].tensor.info->dtype;
    // A GGUF's block formats stay quantized (an nn.Linear's [out, in] rows: whole groups, and for
    // the coded precisions whole blocks of 256, which a K-quant's rows always are)
    const kernels::Precision held = is_block_format(dtype) ? held_as(dtype) : kernels::Precision::F32;
    const bool grouped =
        is_block_format(dtype) && transposed && in % (kernels::is_coded(held) ? kernels::kCodedRows : kernels::group_rows(held)) == 0;
    const kernels::Precision precision = dtype == Dtype::BF16 ? kernels::Precision::BF16
                                         : dtype == Dtype::F16 ? kernels::Precision::F16
                                         : grouped             ? held
                                                               : kernels::Precision::F32;
    void* to = nullptr;
    void* scales = nullptr;
    if (precision == kernels::Precision::F32) {
        to = computed(n);
    } else if (grouped) {  // the numbers, then their scales
        const std::size_t bytes = kernels::packed_bytes(precision, n), extra = kernels::scales_bytes(precision, n);
        w_.storage8.emplace_back(new std::int8_t[bytes + extra]);
        w_.bytes += bytes + extra;
        to = w_.storage8.back().get();
        scales = w_.storage8.back().get() + bytes;
    } else {
        w_.storage16.emplace_back(new std::uint16_t[n]);
        w_.bytes += n * sizeof(std::uint16_t);
        to = w_.storage16.back().get();
    }
    packings.push_back({weight, offset, ld, transposed, isa, precision, in, out, to, scales});
    return {kernels::PackedB{isa, precision, in, out, to, scales}, b};
}

// A required tensor, placed (kept: given its F32 place; else converted into a passing copy).
float* Plan::required(const std::string& name, const std::vector<std::int64_t>& shape, bool prefixed, bool kept) {
    const std::string full = this->full(name, prefixed);
    const Checkpoint::Tensor* t = checkpoint_.find(full);
    if (!t) throw ModelError(checkpoint_.file, checkpoint_.named(full), "missing");
    return place(full, *t, shape, kept);
}

float* Plan::place(const std::string& full, const Checkpoint::Tensor& t, const std::vector<std::int64_t>& shape, bool kept) {
    const std::string& file = checkpoint_.shards[t.shard].shown;
    if (!is_float_weight(t.info->dtype) && !is_block_format(t.info->dtype))
        throw ModelError(file, checkpoint_.named(full), std::string("dtype ") + dtype_name(t.info->dtype) + " is not F32, F16 or BF16");
    if (t.info->shape != shape)
        throw ModelError(file, checkpoint_.named(full), "expected shape " + shape_text(shape) + ", got " + shape_text(t.info->shape));
    float* out = kept ? computed(static_cast<std::size_t>(t.info->elements())) : nullptr;
    w_.parameters += t.info->elements();
    w_.file_bytes[t.info->dtype] += t.info->end - t.info->begin;
    conversions.push_back({t, out});
    return out;
}

}  // namespace attn
