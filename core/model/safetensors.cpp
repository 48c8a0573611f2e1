// safetensors.cpp: see safetensors.hpp.
//
// [SECTION] Dtypes
// [SECTION] The header
// [SECTION] Conversion to F32
#include "safetensors.hpp"

#include "quants.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

namespace attn {

// [SECTION] Dtypes ---------------------------------------------------------------------------

namespace {

struct DtypeRow {
    Dtype dtype;
    const char* name;
    std::size_t bytes;
};
constexpr DtypeRow kDtypes[] = {
    {Dtype::F64, "F64", 8},  {Dtype::F32, "F32", 4},   {Dtype::F16, "F16", 2},       {Dtype::BF16, "BF16", 2},
    {Dtype::I64, "I64", 8},  {Dtype::I32, "I32", 4},   {Dtype::I16, "I16", 2},       {Dtype::I8, "I8", 1},
    {Dtype::U64, "U64", 8},  {Dtype::U32, "U32", 4},   {Dtype::U16, "U16", 2},       {Dtype::U8, "U8", 1},
    {Dtype::BOOL, "BOOL", 1}, {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::F8_E5M2, "F8_E5M2", 1},
    // GGUF's block formats: no size per number, and not a safetensors dtype
    {Dtype::Q4_0, "Q4_0", 0}, {Dtype::Q4_1, "Q4_1", 0}, {Dtype::Q5_0, "Q5_0", 0}, {Dtype::Q5_1, "Q5_1", 0},
    {Dtype::Q8_0, "Q8_0", 0}, {Dtype::Q2_K, "Q2_K", 0}, {Dtype::Q3_K, "Q3_K", 0}, {Dtype::Q4_K, "Q4_K", 0},
    {Dtype::Q5_K, "Q5_K", 0}, {Dtype::Q6_K, "Q6_K", 0}, {Dtype::IQ4_NL, "IQ4_NL", 0}, {Dtype::MXFP4, "MXFP4", 0},
};

const DtypeRow& row_of(Dtype d) {
    for (const DtypeRow& r : kDtypes)
        if (r.dtype == d) return r;
    return kDtypes[1];
}

}  // namespace

const char* dtype_name(Dtype d) { return row_of(d).name; }
std::size_t dtype_bytes(Dtype d) { return row_of(d).bytes; }
bool is_float_weight(Dtype d) { return d == Dtype::F32 || d == Dtype::F16 || d == Dtype::BF16; }
bool is_block_format(Dtype d) { return d >= Dtype::Q4_0; }

// [SECTION] The header -----------------------------------------------------------------------

std::int64_t TensorInfo::elements() const {
    std::int64_t n = 1;
    for (std::int64_t s : shape) n *= s;  // bounded by read_safetensors_header
    return n;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

namespace {

std::string range_text(std::size_t a, std::size_t b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; }

}  // namespace

// pass 1: the length N and the JSON in bytes [8, 8 + N)
// pass 2: each entry's dtype, shape (elements < 2^50) and data_offsets (inside the data, as many
//         bytes as the shape needs)
// pass 3: sorted by offset, the entries tile the data section: no overlap, no hole
SafetensorsHeader read_safetensors_header(const FileBytes& f, const std::string& file) {
    using nlohmann::json;
    const std::size_t size = f.file_size();
    if (size < 8)
        throw ModelError(file, "header", "the file is " + std::to_string(size) + " bytes, too short for the header's length");
    if (!f.range(0, 8)) throw ModelError(file, "header", "its length was not given (" + std::to_string(f.size()) + " bytes were)");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | f.data()[i];
    if (n > size - 8)
        throw ModelError(file, "header", "length " + std::to_string(n) + " is past the end of the file (" +
                                             std::to_string(size) + " bytes)");
    const std::uint8_t* data = f.range(0, 8 + n);
    if (!data)
        throw ModelError(file, "header", "its " + std::to_string(n) + " bytes were not given whole (" + std::to_string(f.size()) +
                                             " bytes of the file were)");
    json j;
    try {
        j = json::parse(reinterpret_cast<const char*>(data) + 8, reinterpret_cast<const char*>(data) + 8 + n);
    } catch (const json::exception& e) {
        std::string what = e.what();
        if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
        throw ModelError(file, "header", "not JSON: " + what);
    }
    if (!j.is_object()) throw ModelError(file, "header", "expected a JSON object");
    SafetensorsHeader h;
    h.data_begin = static_cast<std::size_t>(8 + n);
    const std::size_t data_size = size - h.data_begin;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& name = it.key();
        const json& e = it.value();
        if (name == "__metadata__") {  // the format's free text: string keys to string values
            if (!e.is_object()) throw ModelError(file, name, "expected an object of strings");
            for (auto m = e.begin(); m != e.end(); ++m) {
                if (!m.value().is_string()) throw ModelError(file, name, m.key() + ": expected a string");
                h.metadata.emplace(m.key(), m.value().get<std::string>());
            }
            continue;
        }
        if (!e.is_object()) throw ModelError(file, name, "expected an object with dtype, shape and data_offsets");
        TensorInfo t;
        auto d = e.find("dtype");
        if (d == e.end() || !d->is_string()) throw ModelError(file, name, "dtype: missing or not a string");
        const std::string dname = d->get<std::string>();
        const DtypeRow* row = nullptr;
        for (const DtypeRow& r : kDtypes)
            if (dname == r.name && r.bytes) row = &r;
        if (!row) throw ModelError(file, name, "dtype: \"" + dname + "\" is not a safetensors dtype");
        t.dtype = row->dtype;
        auto s = e.find("shape");
        if (s == e.end() || !s->is_array()) throw ModelError(file, name, "shape: missing or not an array");
        for (const json& dim : *s) {
            if (!dim.is_number_unsigned() || dim.get<std::uint64_t>() > (std::uint64_t{1} << 50))
                throw ModelError(file, name, "shape: expected non-negative integers, got " + s->dump());
            t.shape.push_back(static_cast<std::int64_t>(dim.get<std::uint64_t>()));
        }
        // elements < 2^50, so elements × 8 bytes cannot overflow
        constexpr std::int64_t kMaxElements = std::int64_t{1} << 50;
        std::int64_t elements = 1;
        if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end()) elements = 0;
        for (std::int64_t dim : t.shape) {
            if (elements == 0) break;
            if (elements > kMaxElements / dim) throw ModelError(file, name, "shape: too many elements " + s->dump());
            elements *= dim;
        }
        auto o = e.find("data_offsets");
        if (o == e.end() || !o->is_array() || o->size() != 2 || !(*o)[0].is_number_unsigned() ||
            !(*o)[1].is_number_unsigned())
            throw ModelError(file, name, "data_offsets: expected [begin, end]");
        const std::uint64_t b = (*o)[0].get<std::uint64_t>(), en = (*o)[1].get<std::uint64_t>();
        if (b > en) throw ModelError(file, name, "data_offsets " + o->dump() + ": begin is after end");
        if (en > data_size)
            throw ModelError(file, name, "data_offsets " + o->dump() + " are past the end of the data (" +
                                             std::to_string(data_size) + " bytes)");
        const std::uint64_t need = static_cast<std::uint64_t>(elements) * row->bytes;
        if (en - b != need)
            throw ModelError(file, name, "data_offsets " + o->dump() + " hold " + std::to_string(en - b) + " bytes, shape " +
                                             shape_text(t.shape) + " of " + row->name + " needs " + std::to_string(need));
        t.begin = h.data_begin + static_cast<std::size_t>(b);
        t.end = h.data_begin + static_cast<std::size_t>(en);
        h.tensors.emplace(name, std::move(t));
    }
    std::vector<std::pair<const std::string*, const TensorInfo*>> by_offset;
    for (const auto& [name, t] : h.tensors) by_offset.emplace_back(&name, &t);
    std::sort(by_offset.begin(), by_offset.end(), [](const auto& a, const auto& b) {
        return a.second->begin != b.second->begin ? a.second->begin < b.second->begin : a.second->end < b.second->end;
    });
    std::size_t at = h.data_begin;
    const std::string* previous = nullptr;
    for (const auto& [name, t] : by_offset) {
        if (t->begin < at)
            throw ModelError(file, *name, "data_offsets " + range_text(t->begin - h.data_begin, t->end - h.data_begin) +
                                              " overlap " + *previous + "'s");
        if (t->begin > at)
            throw ModelError(file, "header", "bytes " + range_text(at - h.data_begin, t->begin - h.data_begin) +
                                                 " of the data belong to no tensor");
        at = t->end;
        previous = name;
    }
    if (at != size)
        throw ModelError(file, "header", "bytes " + range_text(at - h.data_begin, size - h.data_begin) +
                                             " of the data belong to no tensor");
    return h;
}

// [SECTION] Conversion to F32 ----------------------------------------------------------------

float f16_to_f32(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
    std::uint32_t bits;
    if (exp == 0x1F) bits = sign | 0x7F800000u | (mant << 13);  // inf, NaN
    else if (exp != 0) bits = sign | ((exp + 112) << 23) | (mant << 13);
    else if (mant == 0) bits = sign;
    else {  // subnormal: mant·2^-24, exact in float
        float f = static_cast<float>(mant) * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

float bf16_to_f32(std::uint16_t h) {
    const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

void convert_to_f32(const std::uint8_t* data, const TensorInfo& t, float* out) {
    const std::uint8_t* p = data + t.begin;
    const std::size_t n = static_cast<std::size_t>(t.elements());
    switch (t.dtype) {
        case Dtype::F32: std::memcpy(out, p, n * 4); return;  // little-endian hosts only (x86-64, wasm)
        case Dtype::F16:
            for (std::size_t i = 0; i < n; ++i) out[i] = f16_to_f32(static_cast<std::uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
            return;
        case Dtype::BF16:
            for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(static_cast<std::uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
            return;
        default:
            if (is_block_format(t.dtype)) dequantize(t.dtype, p, t.elements(), out);
            return;
    }
}

}  // namespace attn
