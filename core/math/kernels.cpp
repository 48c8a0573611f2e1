// kernels.cpp: kernels_body.inc compiled once per instruction set, and the table of the sets
// this CPU runs, where a Context's instruction set finds its entry points.
//
// [SECTION] One body per instruction set
// [SECTION] Dispatch
// [SECTION] Products' parts
// [SECTION] Heads' parts
// [SECTION] Row spans
// [SECTION] Entry points
#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#ifndef ATTN_SIMD
#define ATTN_SIMD 1  // -DATTN_SIMD=OFF in CMake builds the scalar body only
#endif
#if ATTN_SIMD && defined(__x86_64__)
#define ATTN_HAVE_X86 1
#include <immintrin.h>
#endif
#if ATTN_SIMD && defined(__wasm_simd128__)
#define ATTN_HAVE_SIMD128 1
#endif
#if ATTN_SIMD && defined(__wasm_relaxed_simd__)
#define ATTN_HAVE_RELAXED 1
#endif
// -DATTN_ONE_ISA=1 (the page's two wasm modules, CMakeLists.txt): only the best set this build
// has, so that a reader downloads no kernels the page never runs (docs/BENCHMARKS-HISTORY.md, the budget).
#if defined(ATTN_ONE_ISA) && ATTN_ONE_ISA && (ATTN_HAVE_SIMD128 || ATTN_HAVE_RELAXED)
#if ATTN_HAVE_RELAXED
#undef ATTN_HAVE_SIMD128
#endif
#else
#define ATTN_HAVE_SCALAR 1
#endif

namespace attn::kernels {

// [SECTION] One body per instruction set ------------------------------------------------------

#ifdef ATTN_HAVE_SCALAR
// Scalar: one-lane vectors, 4×4 tiles of scalar registers.
#define ATTN_NS scalar
#define ATTN_W 1
#define ATTN_MR 4
#define ATTN_NV 4
#define ATTN_TARGET
#define ATTN_FMA(a, b, c) ((a) * (b) + (c))
#include "kernels_body.inc"
#endif

#ifdef ATTN_HAVE_X86
// SSE2, the x86-64 baseline: 6×8 tiles (12 accumulators of 16 xmm registers).
#define ATTN_NS sse2
#define ATTN_W 4
#define ATTN_MR 6
#define ATTN_NV 2
#define ATTN_TARGET
#define ATTN_FMA(a, b, c) ((a) * (b) + (c))
#include "kernels_body.inc"

// AVX2 + FMA, used when the CPU has both: 6×16 tiles (12 ymm accumulators).
#define ATTN_NS avx2
#define ATTN_W 8
#define ATTN_MR 6
#define ATTN_NV 2
#define ATTN_TARGET __attribute__((target("avx2,fma")))
#define ATTN_FMA(a, b, c) ((vf)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#define ATTN_I8(p) ((vf)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))))
#define ATTN_U8(p) ((vi)_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))))
#include "kernels_body.inc"

// AVX-512 (F), used when the CPU has it: 6×32 tiles (12 of the 32 zmm registers accumulate),
// twice AVX2's lanes. OpenBLAS uses it where the CPU has it (PyTorch's products, natively).
#define ATTN_NS avx512
#define ATTN_W 16
#define ATTN_MR 6
#define ATTN_NV 2
#define ATTN_TARGET __attribute__((target("avx512f")))
#define ATTN_FMA(a, b, c) ((vf)_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))
// (the maskz forms, all lanes: GCC 12 warns that the plain ones' _mm512_undefined source "may be used uninitialized")
#define ATTN_I8(p) \
    ((vf)_mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_maskz_cvtepi8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))))
#define ATTN_U8(p) ((vi)_mm512_maskz_cvtepu8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))))
#include "kernels_body.inc"
#endif

#ifdef ATTN_HAVE_SIMD128
// wasm SIMD128 (no FMA): 4×8 tiles, so that V8 keeps the 8 accumulators, 2 panel vectors
// and the broadcast in its 16 xmm registers.
#define ATTN_NS simd128
#define ATTN_W 4
#define ATTN_MR 4
#define ATTN_NV 2
#define ATTN_TARGET
#define ATTN_FMA(a, b, c) ((a) * (b) + (c))
#include "kernels_body.inc"
#endif

#ifdef ATTN_HAVE_RELAXED
// wasm relaxed SIMD (the second wasm module, built with -mrelaxed-simd): each product and add
// one f32x4.relaxed_madd, which V8 runs as vfmadd231ps where the CPU has FMA. No temporary for
// the product, so 6×8 tiles fit: 12 accumulators, 2 panel vectors and the broadcast in the 15
// xmm registers V8 allocates (xmm15 is its scratch). Measured in Chromium 156 against 4×8:
// attention at T = 128 7–9 % faster, 8 % at T = 512 (bench/ort_chromium.mjs); 5×8 in between.
// (SIMD128 stays at 4×8: its multiply and add need a 16th register, and 5×8 and 6×8 were 1–3 %
// slower there.)
// Clang 14 knows it only as the prototype __builtin_wasm_fma_f32x4, whose opcode
// scripts/wasm_relaxed.py renumbers after the link; the engine then computes a·b + c. Binaryen
// 108 folds the prototype as a + b·c when all three operands are constants: none are here
// (the kernel tests would see it).
#define ATTN_NS relaxed
#define ATTN_W 4
#define ATTN_MR 6
#define ATTN_MR16 3  // over 16-bit panels, 2 tiles of 3×8: 6×8 and the widening spilled (BF16: 2× F32's time)
#define ATTN_NV 2
#define ATTN_TARGET
#define ATTN_FMA(a, b, c) ((vf)__builtin_wasm_fma_f32x4((a), (b), (c)))
#include "kernels_body.inc"
#endif

// [SECTION] Dispatch --------------------------------------------------------------------------

namespace {

struct Table {
    Isa isa;
    void (*matmul)(Context&, int, int, int, const float*, int, const float*, int, bool, const float*, float*, int);
    int nr;  // the products' panel width
    std::size_t (*packed_size)(int, int);
    std::size_t (*scratch_floats)(int, int);
    int (*pack_step)(int);
    void (*pack_columns)(int, int, int, int, const std::uint8_t*, int, bool, float*);
    void (*pack_columns16)(int, int, int, int, const std::uint8_t*, int, bool, std::uint16_t*);
    // per Precision (F32, BF16, F16, Q8, Q4, Q8K, Q4K, Q6K, Q8S, Q5K; pack_numbers and pack_scales:
    // the grouped ones only)
    void (*pack_numbers[10])(int, int, int, int, const std::uint8_t*, int, std::uint8_t*);
    void (*pack_scales[10])(int, int, int, int, const GroupedColumns&, std::uint8_t*);
    void (*unpack[10])(int, int, const void*, const void*, float*, int);
    void (*column[10])(int, int, const void*, const void*, int, float*);
    void (*matmul_packed[10])(Context&, int, int, int, const float*, int, const void*, const void*, const float*, float*, int, int,
                             int);
    void (*softmax_rows)(const float*, float, const std::uint8_t*, const RowSpan*, int, int, float*, float*,
                         std::vector<int>*);
    void (*exp_nonpositive)(const float*, float*, int);
    void (*exp2_nonpositive)(const float*, float*, int);
    void (*attention_head)(Context&, const HeadArgs&, const RowSpan*);
    void (*head_region)(Context&, const RegionArgs&);
    int mr;  // the register tiles' rows
};

// A function template's instances for the grouped precisions, in Precision's order from Q8 on.
#define ATTN_GROUPED(ns, fn) fn<ns::Q8>, fn<ns::Q4>, fn<ns::Q8K>, fn<ns::Q4K>, fn<ns::Q6K>, fn<ns::Q8S>, fn<ns::Q5K>
#define ATTN_TABLE(ns, isa)                                                                                           \
    Table{isa,                                                                                                        \
          ns::matmul,                                                                                                 \
          ns::NR,                                                                                                     \
          ns::packed_size,                                                                                            \
          ns::scratch_floats,                                                                                         \
          ns::pack_step,                                                                                              \
          ns::pack_columns<float>,                                                                                    \
          ns::pack_columns<std::uint16_t>,                                                                            \
          {nullptr, nullptr, nullptr, ATTN_GROUPED(ns, ns::pack_numbers)},                                            \
          {nullptr, nullptr, nullptr, ATTN_GROUPED(ns, ns::pack_scales)},                                             \
          {ns::unpack_whole<ns::F32>, ns::unpack_whole<ns::Bf16>, ns::unpack_whole<ns::F16>,                          \
           ATTN_GROUPED(ns, ns::unpack_whole)},                                                                       \
          {ns::packed_column<ns::F32>, ns::packed_column<ns::Bf16>, ns::packed_column<ns::F16>,                       \
           ATTN_GROUPED(ns, ns::packed_column)},                                                                      \
          {ns::matmul_packed<ns::F32>, ns::matmul_packed<ns::Bf16>, ns::matmul_packed<ns::F16>,                       \
           ATTN_GROUPED(ns, ns::matmul_packed)},                                                                      \
          ns::softmax_rows,                                                                                           \
          ns::exp_nonpositive,                                                                                        \
          ns::exp2_nonpositive,                                                                                       \
          ns::attention_head,                                                                                         \
          ns::head_region,                                                                                            \
          ns::MR}

#ifdef ATTN_HAVE_X86
bool cpu_has(Isa isa) {
    if (isa == Isa::Avx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (isa == Isa::Avx512) return __builtin_cpu_supports("avx512f");
    return true;
}
#endif

std::vector<Table> tables() {
    std::vector<Table> t;
#ifdef ATTN_HAVE_SCALAR
    t.push_back(ATTN_TABLE(scalar, Isa::Scalar));
#endif
#ifdef ATTN_HAVE_X86
    t.push_back(ATTN_TABLE(sse2, Isa::Sse2));
    if (cpu_has(Isa::Avx2)) t.push_back(ATTN_TABLE(avx2, Isa::Avx2));
    if (cpu_has(Isa::Avx512)) t.push_back(ATTN_TABLE(avx512, Isa::Avx512));
#endif
#ifdef ATTN_HAVE_SIMD128
    t.push_back(ATTN_TABLE(simd128, Isa::Simd128));
#endif
#ifdef ATTN_HAVE_RELAXED
    t.push_back(ATTN_TABLE(relaxed, Isa::Relaxed));
#endif
    return t;
}

// The sets this binary has and this CPU runs, best last: a constant, found on first use.
const std::vector<Table>& all_tables() {
    static const std::vector<Table> kTables = tables();
    return kTables;
}

const Table& table(Isa isa) {
    for (const Table& t : all_tables())
        if (t.isa == isa) return t;
    throw std::invalid_argument(std::string("instruction set not available: ") + isa_name(isa));
}

}  // namespace

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::Scalar: return "scalar";
        case Isa::Sse2: return "sse2";
        case Isa::Avx2: return "avx2+fma";
        case Isa::Avx512: return "avx512f";
        case Isa::Simd128: return "wasm-simd128";
        case Isa::Relaxed: return "wasm-relaxed-simd";
    }
    return "?";
}

std::vector<Isa> available_isas() {
    std::vector<Isa> isas;
    for (const Table& t : all_tables()) isas.push_back(t.isa);
    return isas;
}

Isa best_isa() { return all_tables().back().isa; }

Context::Context(Isa isa, Pool* pool) : isa(table(isa).isa), pool(pool) {}

void Context::make_workers() {
    const std::size_t n = pool ? static_cast<std::size_t>(pool->capacity() - 1) : 0;  // any the pool may be set to
    while (workers_.size() < n) workers_.push_back(std::make_unique<Context>(isa));
    for (auto& w : workers_) w->isa = isa;  // the caller may have changed its own
}

// [SECTION] Products' parts -------------------------------------------------------------------

ProductSplit::Box ProductSplit::part(int p, int M, int N) const {
    const auto [i0, i1] = part_range(p / cols, rows, M, row_step);
    const auto [j0, j1] = part_range(p % cols, cols, N, col_step);
    return {i0, i1, j0, j1};
}

ProductSplit product_split(Isa isa, int threads, int M, int N, int K, double split_work) {
    const Table& t = table(isa);
    if (threads <= 1 || M <= 0 || N <= 0 || K <= 0 || static_cast<double>(M) * N * K < split_work) return {1, 1, t.mr, t.nr};
    const int panels = (N + t.nr - 1) / t.nr, tiles = (M + t.mr - 1) / t.mr, goal = threads;
    // the largest part (whole panels and tiles, the last ones short) over the mean
    const auto imbalance = [&](int rows, int cols) {
        const double r = std::min<double>(M, static_cast<double>((tiles + rows - 1) / rows) * t.mr);
        const double c = std::min<double>(N, static_cast<double>((panels + cols - 1) / cols) * t.nr);
        return r * c / (static_cast<double>(M) * N / (static_cast<double>(rows) * cols));
    };
    ProductSplit best{1, 1, t.mr, t.nr};
    double best_score = 1e300;
    for (int cols = 1; cols <= std::min(panels, goal); ++cols) {
        const int rows = std::min(tiles, (goal + cols - 1) / cols);
        // short of a part per thread costs most; then the imbalance; then row parts (each reads
        // its columns of B again)
        const double score = (rows * cols < goal ? 1e6 * (goal - rows * cols) : 0) + imbalance(rows, cols) + 1e-3 * rows;
        if (score < best_score) best_score = score, best.rows = rows, best.cols = cols;
    }
    return best;
}

// [SECTION] Heads' parts ----------------------------------------------------------------------

std::vector<HeadPart> head_parts(Isa isa, int threads, int heads, const std::vector<RowSpan>& spans, double work,
                                 double split_work) {
    const int T = static_cast<int>(spans.size());
    std::vector<HeadPart> parts;
    if (T == 0 || heads <= 0) return parts;
    const int per_head = threads <= 1 || work < split_work ? 1 : std::min(T, (4 * threads + heads - 1) / heads);
    // cost[i]: rows [0, i)'s keys; a cut k of n at the first row where the cost reaches k/n of it
    std::vector<double> cost(static_cast<std::size_t>(T) + 1, 0.0);
    for (int i = 0; i < T; ++i) cost[i + 1] = cost[i] + std::max(1, spans[i].hi - spans[i].lo);
    const auto cuts = [&](int round) {
        std::vector<int> at{0};
        for (int k = 1; k < per_head; ++k) {
            const double goal = cost[T] * k / per_head;
            int i = static_cast<int>(std::lower_bound(cost.begin(), cost.end(), goal) - cost.begin());
            i = std::clamp((i + round / 2) / round * round, at.back(), T);
            if (i > at.back()) at.push_back(i);
        }
        if (T > at.back()) at.push_back(T);
        return at;
    };
    const auto worst = [&](const std::vector<int>& at) {
        double most = 0;
        for (std::size_t k = 1; k < at.size(); ++k) most = std::max(most, cost[at[k]] - cost[at[k - 1]]);
        return most / (cost[T] / static_cast<double>(at.size() - 1));
    };
    std::vector<int> at = cuts(table(isa).mr);
    if (per_head > 1 && worst(at) > 1.2) at = cuts(1);
    for (int h = 0; h < heads; ++h)
        for (std::size_t k = 1; k < at.size(); ++k) parts.push_back({h, at[k - 1], at[k]});
    return parts;
}

// [SECTION] Row spans -------------------------------------------------------------------------

std::vector<RowSpan> row_spans(const std::uint8_t* allowed, int T_q, int T_k) {
    std::vector<RowSpan> spans(std::max(T_q, 0), RowSpan{0, T_k, true});
    if (!allowed) return spans;
    constexpr std::uint64_t kOnes = 0x0101010101010101ull;
    for (int i = 0; i < T_q; ++i) {
        const std::uint8_t* a = allowed + static_cast<std::ptrdiff_t>(i) * T_k;
        // Mask entries are 0/1 (combine_masks), but any non-zero byte counts as allowed.
        int lo = 0, hi = T_k;
        while (lo < T_k && !a[lo]) ++lo;
        while (hi > lo && !a[hi - 1]) --hi;
        // Dense: every byte in [lo, hi) is exactly 1, checked eight at a time.
        bool dense = true;
        int j = lo;
        for (; dense && j + 8 <= hi; j += 8) {
            std::uint64_t word;
            std::memcpy(&word, a + j, 8);
            dense = word == kOnes;
        }
        for (; dense && j < hi; ++j) dense = a[j] == 1;
        spans[i] = RowSpan{lo, std::max(lo, hi), dense};
    }
    return spans;
}

// [SECTION] Entry points ----------------------------------------------------------------------

void matmul(Context& ctx, int M, int N, int K, const float* A, int lda, const float* B, int ldb, bool b_transposed,
            const float* bias, float* C, int ldc) {
    const Table& t = table(ctx.isa);
    // Columns only: a part of one row would take matvec's path, whose sums run in another order.
    const int parts = std::min(product_split(ctx.isa, ctx.threads() * ctx.product_parts, M, N, K, ctx.split_work).parts(), (N + t.nr - 1) / t.nr);
    if (parts <= 1) return t.matmul(ctx, M, N, K, A, lda, B, ldb, b_transposed, bias, C, ldc);
    // Each part is the product with B's columns j0 … j1 − 1 (rows, transposed): a B of its own.
    for_parts(ctx, parts, ctx.split_work, [&](int part, Context& w) {  // parts > 1: big enough
        const auto [j0, j1] = part_range(part, parts, N, t.nr);
        t.matmul(w, M, j1 - j0, K, A, lda, B + (b_transposed ? static_cast<std::ptrdiff_t>(j0) * ldb : j0), ldb,
                 b_transposed, bias ? bias + j0 : nullptr, C + j0, ldc);
    });
}

std::size_t packed_size(Isa isa, int K, int N) { return table(isa).packed_size(K, N); }

bool is_grouped(Precision precision) {
    return precision == Precision::Q8 || precision == Precision::Q4 || precision == Precision::Q8S || is_coded(precision);
}
bool is_coded(Precision precision) {
    return precision == Precision::Q8K || precision == Precision::Q4K || precision == Precision::Q6K || precision == Precision::Q5K;
}
int group_rows(Precision precision) {
    if (precision == Precision::Q8 || precision == Precision::Q8K || precision == Precision::Q6K) return kQ8Group;
    if (precision == Precision::Q4 || precision == Precision::Q4K || precision == Precision::Q8S || precision == Precision::Q5K) return kQ4Group;
    return 1;
}
std::size_t packed_bytes(Precision precision, std::size_t packed) {
    switch (precision) {
        case Precision::F32: return packed * 4;
        case Precision::BF16:
        case Precision::F16: return packed * 2;
        case Precision::Q8:
        case Precision::Q8K:
        case Precision::Q8S: return packed;
        case Precision::Q4:
        case Precision::Q4K: return packed / 2;
        case Precision::Q6K: return packed / 4 * 3;
        case Precision::Q5K: return packed / 8 * 5;
    }
    return 0;
}
std::size_t scales_bytes(Precision precision, std::size_t packed) {
    // per 256 numbers (kernels_body.inc's FloatScales and CodedScales): 2 floats per group, or
    // per 256 rows 4 bytes per factor and per group a byte per code
    switch (precision) {
        case Precision::Q8: return packed / 2;
        case Precision::Q4: return packed / 4;
        case Precision::Q8K:
        case Precision::Q6K: return packed / 256 * (4 + kCodedRows / kQ8Group);
        case Precision::Q4K:
        case Precision::Q5K: return packed / 256 * 2 * (4 + kCodedRows / kQ4Group);
        case Precision::Q8S: return packed / 8;
        default: return 0;
    }
}
std::size_t scratch_floats(Isa isa, int T_k, int d_k) { return table(isa).scratch_floats(T_k, d_k); }

PackedB pack(Isa isa, int K, int N, const float* B, int ldb, bool b_transposed, float* out) {
    pack_columns(isa, Precision::F32, K, N, 0, N, B, ldb, b_transposed, out);
    return PackedB{isa, Precision::F32, K, N, out};
}

PackedB pack16(Isa isa, Precision precision, int K, int N, const void* B, int ldb, bool b_transposed,
               std::uint16_t* out) {
    if (precision == Precision::F32) throw std::invalid_argument("pack16: F32 is not a 16-bit precision");
    pack_columns(isa, precision, K, N, 0, N, B, ldb, b_transposed, out);
    return PackedB{isa, precision, K, N, out};
}

int pack_step(Isa isa, int N) { return table(isa).pack_step(std::max(N, 1)); }

void pack_columns(Isa isa, Precision precision, int K, int N, int j0, int j1, const void* B, int ldb, bool b_transposed,
                  void* out) {
    const Table& t = table(isa);
    const int step = t.pack_step(std::max(N, 1));
    if (K < 0 || j0 < 0 || j0 > j1 || j1 > N || j0 % step != 0 || (j1 != N && j1 % step != 0))
        throw std::invalid_argument("pack_columns: columns [" + std::to_string(j0) + ", " + std::to_string(j1) + ") of " +
                                    std::to_string(N) + " are not whole parts of " + std::to_string(step));
    const auto* bytes = static_cast<const std::uint8_t*>(B);
    if (is_grouped(precision))
        throw std::invalid_argument("pack_columns: grouped numbers come with their scales (pack_columns_grouped)");
    if (precision == Precision::F32) t.pack_columns(K, N, j0, j1, bytes, ldb, b_transposed, static_cast<float*>(out));
    else t.pack_columns16(K, N, j0, j1, bytes, ldb, b_transposed, static_cast<std::uint16_t*>(out));
}

void pack_columns_grouped(Isa isa, Precision precision, int K, int N, int j0, int j1, const GroupedColumns& columns,
                          void* out, void* out_scales) {
    const Table& t = table(isa);
    const int step = t.pack_step(std::max(N, 1));
    const bool coded = is_coded(precision);
    const int rows = coded ? kCodedRows : group_rows(precision);
    const bool offsets = precision != Precision::Q8K && precision != Precision::Q6K && precision != Precision::Q8S;
    const bool given = columns.q && (coded ? columns.a && columns.d && (!offsets || (columns.b && columns.m))
                                           : columns.s && (!offsets || columns.o));
    if (!is_grouped(precision) || !given)
        throw std::invalid_argument("pack_columns_grouped: a grouped precision with its numbers and scales");
    if (K < 0 || K % rows != 0 || j0 < 0 || j0 > j1 || j1 > N || j0 % step != 0 || (j1 != N && j1 % step != 0))
        throw std::invalid_argument("pack_columns_grouped: K = " + std::to_string(K) + " (a multiple of " + std::to_string(rows) +
                                    "), columns [" + std::to_string(j0) + ", " + std::to_string(j1) + ") of " + std::to_string(N) +
                                    " (whole parts of " + std::to_string(step) + ")");
    t.pack_numbers[static_cast<int>(precision)](K, N, j0, j1, static_cast<const std::uint8_t*>(columns.q), columns.ldq,
                                                static_cast<std::uint8_t*>(out));
    t.pack_scales[static_cast<int>(precision)](K, N, j0, j1, columns, static_cast<std::uint8_t*>(out_scales));
}

void unpack(const PackedB& B, float* out, int ldo) {
    table(B.isa).unpack[static_cast<int>(B.precision)](B.K, B.N, B.data, B.scales, out, ldo);
}

void column(const PackedB& B, int j, float* out) {
    table(B.isa).column[static_cast<int>(B.precision)](B.K, B.N, B.data, B.scales, j, out);
}

void matmul(Context& ctx, int M, const float* A, int lda, const PackedB& B, const float* bias, float* C, int ldc) {
    const Table& t = table(ctx.isa);
    if (t.nr == table(B.isa).nr) {
        // Each part is the packed panels [j0, j1) / nr, read where they are.
        const auto product = t.matmul_packed[static_cast<int>(B.precision)];
        const ProductSplit split = product_split(ctx.isa, ctx.threads() * ctx.product_parts, M, B.N, B.K, ctx.split_work);
        return for_parts(ctx, split.parts(), ctx.split_work, [&](int part, Context& w) {  // one part: on ctx
            const auto [i0, i1, j0, j1] = split.part(part, M, B.N);
            product(w, i1 - i0, B.N, B.K, A + static_cast<std::ptrdiff_t>(i0) * lda, lda, B.data, B.scales, bias,
                    C + static_cast<std::ptrdiff_t>(i0) * ldc, ldc, j0 / t.nr, (j1 + t.nr - 1) / t.nr);
        });
    }
    std::vector<float> dense(static_cast<std::size_t>(B.K) * B.N);
    unpack(B, dense.data(), B.N);
    t.matmul(ctx, M, B.N, B.K, A, lda, dense.data(), B.N, false, bias, C, ldc);
}

void softmax_rows(Isa isa, const float* s, float factor, const std::uint8_t* allowed, const RowSpan* spans, int T_q,
                  int T_k, float* scaled, float* weights, std::vector<int>* fully_masked) {
    std::vector<RowSpan> own;
    if (!spans) own = row_spans(allowed, T_q, T_k), spans = own.data();
    table(isa).softmax_rows(s, factor, allowed, spans, T_q, T_k, scaled, weights, fully_masked);
}

void exp_nonpositive(Isa isa, const float* x, float* y, int n) { table(isa).exp_nonpositive(x, y, n); }

void exp2_nonpositive(Isa isa, const float* t, float* y, int n) { table(isa).exp2_nonpositive(t, y, n); }

void head_region(Context& ctx, const RegionArgs& args) { table(ctx.isa).head_region(ctx, args); }

void attention_head(Context& ctx, const HeadArgs& args) {
    std::vector<RowSpan> own;
    const RowSpan* spans = args.spans;
    if (!spans) own = row_spans(args.allowed, args.T_q, args.T_k), spans = own.data();
    table(ctx.isa).attention_head(ctx, args, spans);
}

}  // namespace attn::kernels
