// kernels.hpp: the raw SIMD kernels behind attention.hpp, on plain row-major float arrays.
//
// One source (kernels_body.inc) is compiled once per instruction set and picked at run time:
//   x86-64:  avx512 (16 lanes, FMA) when the CPU has AVX-512 F, else avx2 (8 lanes, FMA) when
//            it has AVX2 and FMA, else sse2 (4 lanes); chosen with __builtin_cpu_supports, so
//            the binary runs on any x86-64
//   wasm:    simd128 (4 lanes) when built with -msimd128, and relaxed (4 lanes, fused
//            multiply-add) too in the second module, built with -mrelaxed-simd: the page loads
//            it where the browser validates relaxed SIMD (web/site/attnviz-page.js); the page's
//            modules are built with ATTN_ONE_ISA and carry only that best set
//   always:  scalar (1 lane): the same code with one-lane vectors, for the scalar build
//            (-DATTN_SIMD=OFF) and for the tests that compare instruction sets (not in the page)
//
// Nothing here keeps state: the caller says which instruction set to run and owns the work
// memory (ggml's context, llm.c's activations): the products and the fused head take a Context
// that holds both, the softmax and the exps the instruction set alone.
//
// [SECTION] Instruction sets and the caller's context
// [SECTION] Matrix products
// [SECTION] Masks as row spans
// [SECTION] Softmax and exp
// [SECTION] One head, fused per block of rows
#pragma once

#include "pool.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <limits>
#include <vector>

namespace attn::kernels {

// [SECTION] Instruction sets and the caller's context -----------------------------------------

enum class Isa { Scalar, Sse2, Avx2, Avx512, Simd128, Relaxed };

const char* isa_name(Isa isa);
// The instruction sets this binary has and this CPU runs, best last.
std::vector<Isa> available_isas();
// The last of them, found once: what a Context runs unless told otherwise.
Isa best_isa();

// Floats that the kernels write before they read (packed panels): grows, never shrinks, and is
// not zeroed (a std::vector would clear every new element, only for the packing to overwrite it).
class Scratch {
public:
    float* get(std::size_t n) {
        if (n > size_) data_.reset(new float[n]), size_ = n;
        return data_.get();
    }

private:
    std::unique_ptr<float[]> data_;
    std::size_t size_ = 0;
};

// Below this many multiply-adds, a job stays on the calling thread: waking the pool's threads
// (microseconds) would cost about what they save (tiny-lm's products and heads stay below it).
constexpr double kSplitWork = 1 << 20;

// What a kernel call needs from its caller: the instruction set, the packed panels' memory, and
// the threads it may use. Panels are rebuilt on every call; keeping the memory from one call to
// the next (the projections and heads of one attention call share a Context) saves the
// allocation and page faults of fresh buffers (0.5 MB for B's block in a product with 512
// columns, 0.5 MB for the K or V panels at T = 2048) without changing any result. One thread at
// a time uses a Context.
// With a pool (the caller's, pool.hpp), a product splits C's columns among the pool's threads and
// for_parts splits a loop (the heads of an attention block), each thread with a Context of its
// own (worker()); every number is the same as on one thread, bit for bit, whatever the count.
struct Context {
    Context() = default;        // the best instruction set, this thread alone
    explicit Context(Isa isa, Pool* pool = nullptr);  // std::invalid_argument if `isa` is not one of available_isas()

    Isa isa = best_isa();  // one of available_isas(): the kernels throw std::invalid_argument otherwise
    Pool* pool = nullptr;  // threads for the big products and loops, or nullptr: this thread alone
    double split_work = kSplitWork;  // a job of fewer multiply-adds stays on this thread (the tests: 0)
    int product_parts = 1;           // a product's parts per thread (product_split; benchmarks try more)
    Scratch packed_k, packed_v;  // attention_head: Kᵀ as ⌈T_k/NR⌉ d_k×NR panels, V as ⌈d_k/NR⌉ T_k×NR
    Scratch packed_b, packed_a;  // matmul: B's KC×N block as KC×NR panels, A's MC×KC as KC×MR ones
    Scratch weights;             // a part of a head's rows' weights, where the caller keeps no map

    int threads() const { return pool ? pool->threads() : 1; }
    // The Context of the pool's thread `worker` (0: this one): the same instruction set, its own
    // memory, no pool. Made for every thread before a job starts (for_parts).
    Context& worker(int worker) { return worker == 0 ? *this : *workers_[static_cast<std::size_t>(worker - 1)]; }
    void make_workers();

private:
    std::vector<std::unique_ptr<Context>> workers_;
};

// Part `part` of `parts` of [0, n): runs of whole `step`s (the last may end at n, short), as even
// as can be; the parts in order cover [0, n) once.
struct PartRange {
    int begin, end;
};
inline PartRange part_range(int part, int parts, int n, int step = 1) {
    const long long steps = (static_cast<long long>(n) + step - 1) / step;
    const auto at = [&](int p) { return static_cast<int>(std::min<long long>(n, steps * p / parts * step)); };
    return {at(part), at(part + 1)};
}

// f(part, context) for every part in [0, parts), with the Context of the thread that runs it:
// on ctx's pool when it has one and the job's `work` (its multiply-adds, all parts together) is
// at least ctx.split_work, else on ctx, in order. Parts must write apart from each other.
template <class F>
void for_parts(Context& ctx, int parts, double work, F&& f) {
    if (ctx.threads() == 1 || parts <= 1 || work < ctx.split_work) {
        for (int part = 0; part < parts; ++part) f(part, ctx);
        return;
    }
    ctx.make_workers();
    ctx.pool->run(parts, [&](int part, int worker) { f(part, ctx.worker(worker)); });
}

// [SECTION] Matrix products ------------------------------------------------------------------

// C = A·B (+ bias). A: M×K (row stride lda); B: K×N (stride ldb), or when b_transposed its
// transpose is given, N×K (stride ldb), and C = A·Bᵀ; bias: N entries or nullptr; C: M×N
// (stride ldc). Packed panels of B and micro-panels of A, register tiles of MR rows × NR
// columns; the blocking (KC deep, MC rows) is explained at matmul in kernels_body.inc.
void matmul(Context& ctx, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
            bool b_transposed, const float* bias, float* C, int ldc);

// How a product C = A·B (M×N, K deep) splits among `threads` threads: rows × cols parts, C's
// rows in runs of whole register tiles (MR rows) and its columns in whole panels (NR columns),
// a part per thread where the product has the tiles and panels for them (columns first: a row
// part reads its columns of B again), the largest part as near the mean as can be. Not more:
// each column part packs A's rows again, one scalar copy per element, which at T = 128 costs
// what a part's products gain (4 parts per thread: 10 % slower on 2 threads, BENCHMARKS.md).
// One part when the product is below split_work multiply-adds or one thread runs it. A part's
// numbers are the whole product's, bit for bit.
struct ProductSplit {
    int rows = 1, cols = 1;
    int row_step = 1, col_step = 1;  // MR and NR
    int parts() const { return rows * cols; }
    // Part p's rows [i0, i1) and columns [j0, j1) of an M×N product.
    struct Box {
        int i0, i1, j0, j1;
    };
    Box part(int p, int M, int N) const;
};
ProductSplit product_split(Isa isa, int threads, int M, int N, int K, double split_work = kSplitWork);

// How a packed B holds its numbers: as floats, or as the 16 bits a checkpoint stores them in
// (bfloat16, IEEE half), widened to floats in the registers as a product reads them. Widening
// is exact (every 16-bit number is a float), so a 16-bit B gives the numbers of its F32 copy
// with half the memory. The grouped precisions hold a GGUF file's block formats (quants.hpp):
// small integers q and, per column and group of rows of K, a scale s and an offset o; the
// number is s·q + o, one multiply-add in the registers.
//   Q8   8-bit q, groups of 16, s and o floats: 1.5 bytes a number; K a multiple of 16.
//   Q4   4-bit q (0 … 15, two a byte), groups of 32, s and o floats: 0.75 bytes a number; K a
//        multiple of 32 (Q4_0, Q4_1).
//   Q8K  8-bit q, groups of 16, s = d·a with an 8-bit code a per group and a float d per 256
//        rows (kCodedRows), o = 0: 1.08 bytes a number (Q6_K, Q3_K: ggml's d·scale).
//   Q4K  4-bit q, groups of 32, s = d·a and o = m·b, codes a and b per group, d and m per 256
//        rows: 0.59 bytes a number (Q4_K: ggml's d·scale and −dmin·min).
//   Q6K  6-bit q (−32 … 31, as a 4-bit and a 2-bit part) with Q8K's scales: 0.83 bytes a
//        number (Q6_K).
//   Q8S  8-bit q, groups of 32, a float s and o = 0: 1.13 bytes a number (Q8_0, Q5_0, IQ4_NL).
//   Q5K  5-bit q (0 … 31, as a 4-bit and a 1-bit part) with Q4K's scales: 0.72 bytes a number
//        (Q5_K).
// The coded precisions' (Q8K, Q4K, Q6K, Q5K) s and o are formed in the registers from their codes
// (exactly: d·a is a half times a small integer) and K is a multiple of 256. The same numbers
// packed in any of them give the same floats, so the same products, bit for bit.
enum class Precision { F32, BF16, F16, Q8, Q4, Q8K, Q4K, Q6K, Q8S, Q5K };
constexpr int kQ8Group = 16;     // Q8's, Q8K's and Q6K's rows of K per scale and offset
constexpr int kQ4Group = 32;     // Q4's, Q4K's, Q8S's and Q5K's
constexpr int kCodedRows = 256;  // the coded precisions' rows of K per factor d (and m)
bool is_grouped(Precision precision);  // Q8, Q4, Q8S and the coded
bool is_coded(Precision precision);    // Q8K, Q4K, Q6K, Q5K
int group_rows(Precision precision);   // the rows of a group (1 for the others)

// B packed once for the products that read it many times (a model's weights): the panels
// matmul packs into the Context on every call, all of them, in the order it reads them. The
// layout is an instruction set's (its panel width NR); a product in another set with another
// width unpacks it first (correct, slower: only the tests do that).
struct PackedB {
    Isa isa = Isa::Scalar;  // whose layout
    Precision precision = Precision::F32;
    int K = 0, N = 0;             // B is K×N
    const void* data = nullptr;    // packed_bytes(precision, packed_size(isa, K, N)) bytes; the caller's
    const void* scales = nullptr;  // grouped: scales_bytes(precision, packed_size(isa, K, N)) bytes; the caller's
};
std::size_t packed_size(Isa isa, int K, int N);  // elements: K × N rounded up to NR columns
// The bytes of `packed` (packed_size) numbers of `precision`, and of their group scales (0 for
// the precisions without).
std::size_t packed_bytes(Precision precision, std::size_t packed);
std::size_t scales_bytes(Precision precision, std::size_t packed);
// The most floats a Context of `isa` keeps in its scratch: products of any size, and heads of T_k
// keys d_k wide (the blocks and panels of the kernels' own sizes).
std::size_t scratch_floats(Isa isa, int T_k, int d_k);
// Packs B (K×N, row stride ldb; or, when b_transposed, N×K given) into out.
PackedB pack(Isa isa, int K, int N, const float* B, int ldb, bool b_transposed, float* out);
// The same for a B of 16-bit numbers (BF16 or F16; std::invalid_argument for F32), as a
// safetensors file stores them (little-endian, at any address): packed as they are.
PackedB pack16(Isa isa, Precision precision, int K, int N, const void* B, int ldb, bool b_transposed,
               std::uint16_t* out);
// Packing in parts, so that a big B is never at hand whole (a checkpoint read a window at a time:
// an nn.Linear's [out, in] weight or a [V, d] table is B transposed, so a range of its rows is a
// range of B's columns). pack_step(isa, N) columns of B sit together in its packing, one run over
// all of K. pack_columns packs the columns [j0, j1) into their place in `out`, B's whole packing
// (packed_size(isa, K, N) elements: floats for F32, 16-bit numbers for BF16 and F16), j0 a
// multiple of pack_step and j1 too or N (else std::invalid_argument). `B` holds those columns
// only: B's column j0 + c is its column c (B[p·ldb + c], or transposed B[c·ldb + p]), numbers as
// `precision` says (floats, or the 16 bits a safetensors file stores), at any address. The parts
// of any such partition of [0, N) give pack's and pack16's numbers, bit for bit (they are one).
int pack_step(Isa isa, int N);
void pack_columns(Isa isa, Precision precision, int K, int N, int j0, int j1, const void* B, int ldb, bool b_transposed,
                  void* out);
// A grouped B's columns [j0, j1) (as pack_columns: whole parts), given transposed, as their
// numbers and their groups' scales (Precision's table above). Column j0 + c:
struct GroupedColumns {
    const void* q = nullptr;  // its K numbers at q + c·ldq: int8 (Q8, Q8K, Q8S; Q6K in −32 … 31, Q5K in 0 … 31), in their low 4 bits (Q4, Q4K)
    int ldq = 0;
    const float* s = nullptr;  // Q8, Q4, Q8S: group g's scale s[c·ldg + g] and offset o[c·ldg + g] (Q8S: none)
    const float* o = nullptr;
    const std::int8_t* a = nullptr;  // coded: group g's codes a[c·ldg + g] (Q4K, Q5K: and b[c·ldg + g])
    const std::int8_t* b = nullptr;
    int ldg = 0;
    const float* d = nullptr;  // coded: rows 256·k … 256·k + 255's factors d[c·ldk + k] (Q4K, Q5K: and m[c·ldk + k])
    const float* m = nullptr;
    int ldk = 0;
};
// out: packed_bytes(precision, packed_size(isa, K, N)) bytes, out_scales: scales_bytes(…) bytes.
// std::invalid_argument for a precision that is not grouped, K not whole groups (the coded: not
// whole 256s), a missing array, or columns that are not whole parts.
void pack_columns_grouped(Isa isa, Precision precision, int K, int N, int j0, int j1, const GroupedColumns& columns,
                          void* out, void* out_scales);
// out: K×N (row stride ldo) = the B that was packed, exactly (widened to floats).
void unpack(const PackedB& B, float* out, int ldo);
// out: column j of B, K floats (a token's embedding, when B is the d×V table of a tied LM head).
void column(const PackedB& B, int j, float* out);
// C = A·B (+ bias), A: M×B.K, C: M×B.N. Bit for bit matmul's numbers for M > 1 (the same loop,
// which only skips the packing), whatever B's precision (the widened numbers are its F32
// copy's); for M = 1 the packed panels are streamed once, as matmul streams B.
void matmul(Context& ctx, int M, const float* A, int lda, const PackedB& B, const float* bias, float* C, int ldc);

// [SECTION] Masks as row spans ---------------------------------------------------------------

// Where a query row may attend: keys lo … hi − 1 hold every allowed key of the row (hi ≤ lo:
// none), and dense says all of them are allowed (no need to read the mask inside the span).
// Causal rows are [0, i + 1) and dense: the work past hi, the masked half, is skipped.
struct RowSpan {
    int lo = 0, hi = 0;
    bool dense = true;
};

// allowed: T_q×T_k of 0/1, or nullptr for "everything allowed". Returns T_q spans.
std::vector<RowSpan> row_spans(const std::uint8_t* allowed, int T_q, int T_k);

// [SECTION] Softmax and exp ------------------------------------------------------------------

// Row-wise masked softmax of factor·s. s, weights: T_q×T_k (may be the same array); allowed:
// T_q×T_k or nullptr; spans: from row_spans (or nullptr: computed here). scaled: T_q×T_k or
// nullptr; when given it receives factor·s with masked entries -inf.
// Per row: pass 1 max (and the scaled row), pass 2 exp, store and sum, pass 3 scale by 1/sum.
// Rows whose span is dense and that hold no +inf (nearly all) take a leaner path:
// e^(x − max) as 2^((x − max)·log2 e) with exp2_nonpositive's polynomial, no per-lane mask
// or NaN test (2^NaN is 0); the others use exp_nonpositive with masks. Masked entries and NaN scores get weight 0, +inf counts as the float max; a row without an
// allowed finite-or-+inf score is all zeros and its index is appended to fully_masked.
void softmax_rows(Isa isa, const float* s, float factor, const std::uint8_t* allowed, const RowSpan* spans,
                  int T_q, int T_k, float* scaled, float* weights, std::vector<int>* fully_masked);

// y = exp(x) for x ≤ 0 (any value: x < −87 gives 0, −inf gives 0). Relative error < 2e-7.
// The softmax's exp for rows with mask holes or +inf scores, exposed for the tests.
void exp_nonpositive(Isa isa, const float* x, float* y, int n);

// y = 2^t for t ≤ 0 (t < −125 gives 0, −inf and NaN give 0). Relative error < 2e-7 (degree-6
// polynomial on |r| ≤ 1/2). The dense softmax rows' exp, exposed for the tests.
void exp2_nonpositive(Isa isa, const float* t, float* y, int n);

// [SECTION] One head, fused per block of rows ------------------------------------------------

// One head: q T_q×d_k, k and v T_k×d_k, output T_q×d_k, row-major with the strides ld_q,
// ld_kv, ld_out (0: d_k; d_model when they are a head's columns of the projected Q, K, V and
// of the concatenated output, read and written in place).
// For each block of MR query rows:
//   pass 1: S = Q·Kᵀ for the block (into scores, or, without scores, straight into weights
//           and only up to the block's last allowed key: the masked half is never computed)
//   pass 2: softmax of the block's rows (softmax_rows' three passes), masked half skipped
//   pass 3: O = weights·V for the block over the keys its rows may attend to
// A row's softmax as attention_head computed it: each allowed entry's weight is e·inv, e the exp
// of the row's path of x − max (x the scaled, capped score): dense rows 2^((x − max)·log2 e)
// (exp2_nonpositive), the others e^(min(x, float max) − max) (exp_nonpositive). A row with no
// key: inv 0 (all weights 0). head_region recomputes any entry from it, bit for bit.
struct RowStat {
    float max = -std::numeric_limits<float>::infinity();
    float inv = 0.0f;  // 1 / (Σ e + the sink's share)
    bool exp2 = false;
};

struct HeadArgs {
    int T_q = 0, T_k = 0, d_k = 0;
    int ld_q = 0, ld_kv = 0, ld_out = 0;    // row strides, 0: d_k
    const float *q = nullptr, *k = nullptr, *v = nullptr;
    const std::uint8_t* allowed = nullptr;  // T_q×T_k, or nullptr: all allowed
    const RowSpan* spans = nullptr;         // T_q spans of `allowed`, or nullptr: computed
    float factor = 1.0f;                    // scaled = factor·scores
    float softcap = 0.0f;                   // > 0: scaled = softcap·tanh(factor·scores/softcap) (Gemma 2)
    // gpt-oss: a logit of no key in every row's softmax, weights = e^{s−m} / (Σ e^{s−m} + e^{sink−m});
    // the row's weights then sum to less than 1, the rest is the sink's. −inf: none.
    float sink = -std::numeric_limits<float>::infinity();
    float* scores = nullptr;                // T_q×T_k Q·Kᵀ (every entry), or nullptr
    float* scaled = nullptr;                // T_q×T_k, masked -inf, or nullptr
    float* weights = nullptr;               // T_q×T_k, required
    float* output = nullptr;                // T_q×d_k (stride ld_out), or nullptr
    std::vector<int>* fully_masked = nullptr;
    RowStat* stats = nullptr;               // T_q, or nullptr: each row's softmax (head_region)
};
void attention_head(Context& ctx, const HeadArgs& args);

// A region of a head's map, recomputed: rows × cols weights of queries q (rows, stride ld_q)
// against keys k (cols, stride ld_kv) with the rows' RowStat from attention_head: bit for bit
// the weights attention_head wrote there. allowed: rows×cols of 0/1 (row stride ld_allowed),
// or nullptr; factor and softcap as the head's. A region costs rows·cols·d_k multiply-adds,
// whatever the row's length: a zoom into a long text's map never recomputes whole rows.
struct RegionArgs {
    int rows = 0, cols = 0, d_k = 0;
    int ld_q = 0, ld_kv = 0, ld_out = 0;    // 0: d_k, d_k, cols
    const float *q = nullptr, *k = nullptr;  // the region's first query row and first key
    const RowStat* stats = nullptr;          // rows
    const std::uint8_t* allowed = nullptr;
    int ld_allowed = 0;
    float factor = 1.0f, softcap = 0.0f;
    float* out = nullptr;                    // rows×cols (stride ld_out)
};
void head_region(Context& ctx, const RegionArgs& args);

// The parts one attention block's heads split into (attend_heads): (head, rows [r0, r1)), so
// that `threads` threads each get at least 4 (when the work is big enough to split at all:
// `work` ≥ split_work) and no part costs more than 1.25 × the mean. A row's cost is its keys
// (its span's length, at least 1); rows are cut in whole MR tiles where that keeps the balance.
// One thread: a part per head. Any split gives the same numbers (attention_head's rows are
// independent of the rows beside them).
struct HeadPart {
    int head, r0, r1;
};
std::vector<HeadPart> head_parts(Isa isa, int threads, int heads, const std::vector<RowSpan>& spans, double work,
                                 double split_work = kSplitWork);

}  // namespace attn::kernels
