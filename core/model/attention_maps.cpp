// attention_maps.cpp: regions of a block's maps from what the forward kept (attention_maps.hpp).
//
// [SECTION] What a block keeps
// [SECTION] Regions, exact and pooled
// [SECTION] Value norms
#include "attention_maps.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace attn {

// [SECTION] What a block keeps ---------------------------------------------------------------

std::size_t KeptHeads::bytes() const {
    return static_cast<std::size_t>(q.size() + k.size() + value_norms.size()) * sizeof(float) +
           stats.size() * sizeof(kernels::RowStat) + keys.size() + groups.size() * sizeof(int);
}

// [SECTION] Regions, exact and pooled --------------------------------------------------------

bool inside(const KeptHeads& k, const MapRegion& r) {
    return r.r0 >= 0 && r.r0 < r.r1 && r.r1 <= k.T_q && r.c0 >= 0 && r.c0 < r.c1 && r.c1 <= k.T_k;
}

namespace {

void check(const KeptHeads& k, int head, const MapRegion& r) {
    if (head < 0 || head >= k.heads) throw std::out_of_range("no head " + std::to_string(head) + " of " + std::to_string(k.heads));
    if (!inside(k, r))
        throw std::out_of_range("rows [" + std::to_string(r.r0) + ", " + std::to_string(r.r1) + ") × keys [" +
                                std::to_string(r.c0) + ", " + std::to_string(r.c1) + ") are not within the map's " +
                                std::to_string(k.T_q) + " × " + std::to_string(k.T_k));
}

// The weights of `region` (checked) into out (rows×cols, row stride ld); `mask`: the caller's
// memory for the region's mask.
void region_into(kernels::Context& ctx, const KeptHeads& k, int head, const MapRegion& r, float* out, int ld,
                 std::vector<std::uint8_t>& mask) {
    const bool masked = k.causal || k.window > 0 || !k.keys.empty() || !k.groups.empty();
    if (masked) {  // KeptHeads::allowed a row at a time: its keys' span (key_span), less the hidden
        const int cols = r.cols();
        mask.resize(static_cast<std::size_t>(r.rows()) * cols);
        for (int i = 0; i < r.rows(); ++i) {
            const auto [first, end] = key_span(r.r0 + i, k.T_k, k.causal, k.window, k.both_ways);
            const int lo = std::clamp(first - r.c0, 0, cols);
            const int hi = std::clamp(end - r.c0, lo, cols);
            std::uint8_t* row = mask.data() + static_cast<std::size_t>(i) * cols;
            std::fill(row, row + lo, std::uint8_t{0});
            if (k.keys.empty()) std::fill(row + lo, row + hi, std::uint8_t{1});
            else std::copy(k.keys.begin() + r.c0 + lo, k.keys.begin() + r.c0 + hi, row + lo);
            std::fill(row + hi, row + cols, std::uint8_t{0});
            if (!k.groups.empty())  // a window's keys alone
                for (int j = lo; j < hi; ++j)
                    row[j] = row[j] && k.groups[static_cast<std::size_t>(r.r0 + i)] == k.groups[static_cast<std::size_t>(r.c0 + j)];
        }
    }
    const int g = head / std::max(k.heads / std::max(k.kv_heads, 1), 1);
    kernels::RegionArgs a;
    a.rows = r.rows(), a.cols = r.cols(), a.d_k = k.d_head;
    a.ld_q = k.heads * k.d_head, a.ld_kv = k.kv_heads * k.d_head, a.ld_out = ld;
    a.q = k.q.data() + static_cast<std::ptrdiff_t>(r.r0) * a.ld_q + head * k.d_head;
    a.k = k.k.data() + static_cast<std::ptrdiff_t>(r.c0) * a.ld_kv + g * k.d_head;
    a.stats = k.stats.data() + static_cast<std::ptrdiff_t>(head) * k.T_q + r.r0;
    a.allowed = masked ? mask.data() : nullptr, a.ld_allowed = r.cols();
    a.factor = k.factor, a.softcap = k.softcap;
    a.out = out;
    kernels::head_region(ctx, a);
}

// Block edges: n entries in `blocks` runs, edge b at ⌊b·n/blocks⌋ (from `first`).
std::vector<int> edges(int first, int n, int blocks) {
    std::vector<int> e(static_cast<std::size_t>(blocks) + 1);
    for (int b = 0; b <= blocks; ++b) e[static_cast<std::size_t>(b)] = first + static_cast<int>(static_cast<long long>(n) * b / blocks);
    return e;
}

}  // namespace

Matrix map_region(kernels::Context& ctx, const KeptHeads& k, int head, const MapRegion& region) {
    check(k, head, region);
    Matrix out(region.rows(), region.cols());
    std::vector<std::uint8_t> mask;
    region_into(ctx, k, head, region, out.data(), region.cols(), mask);
    return out;
}

const char* pool_reduce_name(PoolReduce r) { return r == PoolReduce::Max ? "max" : "mean"; }

namespace {

// The blocks of `region` as rows × cols (clamped to the region), their edges, zeros.
PooledMap blocks_of(const MapRegion& region, int rows, int cols, PoolReduce reduce) {
    PooledMap p;
    p.region = region, p.reduce = reduce;
    const int R = std::clamp(rows, 1, region.rows()), C = std::clamp(cols, 1, region.cols());
    p.row_edges = edges(region.r0, region.rows(), R), p.col_edges = edges(region.c0, region.cols(), C);
    p.values = Matrix::Zero(R, C);
    return p;
}

// Rows of the region's keys (n rows, row stride ld) folded into block row a; `last`: the block
// row's last rows, so a mean divides by the entries its blocks cover.
void fold(PooledMap& p, int a, const float* rows, int n, std::ptrdiff_t ld, bool last) {
    float* out = p.values.row(a).data();
    const int C = static_cast<int>(p.values.cols()), c0 = p.region.c0;
    for (int i = 0; i < n; ++i) {
        const float* row = rows + i * ld;
        for (int b = 0; b < C; ++b)
            for (int j = p.col_edges[static_cast<std::size_t>(b)] - c0; j < p.col_edges[static_cast<std::size_t>(b) + 1] - c0; ++j)
                out[b] = p.reduce == PoolReduce::Max ? std::max(out[b], row[j]) : out[b] + row[j];
    }
    if (last && p.reduce == PoolReduce::Mean) {
        const int height = p.row_edges[static_cast<std::size_t>(a) + 1] - p.row_edges[static_cast<std::size_t>(a)];
        for (int b = 0; b < C; ++b)
            out[b] /= static_cast<float>(height) *
                      static_cast<float>(p.col_edges[static_cast<std::size_t>(b) + 1] - p.col_edges[static_cast<std::size_t>(b)]);
    }
}

}  // namespace

// Per band of blocks' rows (a part for the threads): the band's exact rows, a slab of at most
// kSlab rows at a time (memory: a slab's), folded into its blocks.
PooledMap map_pooled(kernels::Context& ctx, const KeptHeads& k, int head, const MapRegion& region, int rows, int cols,
                     PoolReduce reduce) {
    check(k, head, region);
    constexpr int kSlab = 64;
    PooledMap p = blocks_of(region, rows, cols, reduce);
    const int R = static_cast<int>(p.values.rows());
    const double work = static_cast<double>(region.rows()) * region.cols() * k.d_head;
    const int parts = std::min(R, std::max(1, 4 * ctx.threads()));
    kernels::for_parts(ctx, parts, work, [&](int part, kernels::Context& w) {
        const auto [a0, a1] = kernels::part_range(part, parts, R);
        std::vector<float> slab;
        std::vector<std::uint8_t> mask;
        for (int a = a0; a < a1; ++a) {
            const int end = p.row_edges[static_cast<std::size_t>(a) + 1];
            for (int i0 = p.row_edges[static_cast<std::size_t>(a)]; i0 < end; i0 += kSlab) {
                const MapRegion band{i0, std::min(i0 + kSlab, end), region.c0, region.c1};
                slab.resize(static_cast<std::size_t>(band.rows()) * band.cols());
                region_into(w, k, head, band, slab.data(), band.cols(), mask);
                fold(p, a, slab.data(), band.rows(), band.cols(), band.r1 == end);
            }
        }
    });
    return p;
}

PooledMap pooled(const Matrix& map, const MapRegion& region, int rows, int cols, PoolReduce reduce) {
    if (!(region.r0 >= 0 && region.r0 < region.r1 && region.r1 <= map.rows() && region.c0 >= 0 && region.c0 < region.c1 &&
          region.c1 <= map.cols()))
        throw std::out_of_range("the region is not within the map");
    PooledMap p = blocks_of(region, rows, cols, reduce);
    for (int a = 0; a < static_cast<int>(p.values.rows()); ++a) {
        const int r0 = p.row_edges[static_cast<std::size_t>(a)], r1 = p.row_edges[static_cast<std::size_t>(a) + 1];
        fold(p, a, map.row(r0).data() + region.c0, r1 - r0, map.cols(), true);
    }
    return p;
}

// [SECTION] Value norms ----------------------------------------------------------------------

RowVector value_norms(Eigen::Ref<const Matrix> v, Eigen::Ref<const Matrix> w_o_rows) {
    const Matrix gram = w_o_rows * w_o_rows.transpose();  // pass 1: d_k×d_k
    const Matrix vg = v * gram;                           // pass 2: T_k×d_k, then each row's dot with v_j
    RowVector n(v.rows());
    for (Eigen::Index j = 0; j < v.rows(); ++j) {
        double sq = 0;
        for (Eigen::Index a = 0; a < v.cols(); ++a) sq += static_cast<double>(vg(j, a)) * static_cast<double>(v(j, a));
        n(j) = static_cast<float>(std::sqrt(std::max(sq, 0.0)));
    }
    return n;
}

}  // namespace attn
