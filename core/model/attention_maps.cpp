// attention_maps.cpp: regions of a block's maps from what the forward kept (attention_maps.hpp).
//
// [SECTION] What a block keeps
// [SECTION] Regions, exact and pooled
#include "attention_maps.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace attn {

// [SECTION] What a block keeps ---------------------------------------------------------------

std::size_t KeptHeads::bytes() const {
    return static_cast<std::size_t>(q.size() + k.size()) * sizeof(float) + stats.size() * sizeof(kernels::RowStat) +
           keys.size();
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
    const bool masked = k.causal || k.window > 0 || !k.keys.empty();
    if (masked) {
        mask.resize(static_cast<std::size_t>(r.rows()) * r.cols());
        for (int i = 0; i < r.rows(); ++i)
            for (int j = 0; j < r.cols(); ++j) mask[static_cast<std::size_t>(i) * r.cols() + j] = k.allowed(r.r0 + i, r.c0 + j);
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

// Per band of blocks' rows (a part for the threads): the band's exact rows, a slab of at most
// kSlab rows at a time, folded into its blocks; a mean divides by the entries a block covers.
PooledMap map_pooled(kernels::Context& ctx, const KeptHeads& k, int head, const MapRegion& region, int rows, int cols,
                     PoolReduce reduce) {
    check(k, head, region);
    constexpr int kSlab = 64;
    PooledMap p;
    p.region = region, p.reduce = reduce;
    const int R = std::clamp(rows, 1, region.rows()), C = std::clamp(cols, 1, region.cols());
    p.row_edges = edges(region.r0, region.rows(), R), p.col_edges = edges(region.c0, region.cols(), C);
    p.values = Matrix::Zero(R, C);
    const double work = static_cast<double>(region.rows()) * region.cols() * k.d_head;
    const int parts = std::min(R, std::max(1, 4 * ctx.threads()));
    kernels::for_parts(ctx, parts, work, [&](int part, kernels::Context& w) {
        const auto [a0, a1] = kernels::part_range(part, parts, R);
        std::vector<float> slab;
        std::vector<std::uint8_t> mask;
        for (int a = a0; a < a1; ++a) {
            float* out = p.values.row(a).data();
            for (int i0 = p.row_edges[static_cast<std::size_t>(a)]; i0 < p.row_edges[static_cast<std::size_t>(a) + 1]; i0 += kSlab) {
                const int i1 = std::min(i0 + kSlab, p.row_edges[static_cast<std::size_t>(a) + 1]);
                const MapRegion band{i0, i1, region.c0, region.c1};
                slab.resize(static_cast<std::size_t>(band.rows()) * band.cols());
                region_into(w, k, head, band, slab.data(), band.cols(), mask);
                for (int i = 0; i < band.rows(); ++i) {
                    const float* row = slab.data() + static_cast<std::ptrdiff_t>(i) * band.cols();
                    for (int b = 0; b < C; ++b)
                        for (int j = p.col_edges[static_cast<std::size_t>(b)] - region.c0; j < p.col_edges[static_cast<std::size_t>(b) + 1] - region.c0; ++j)
                            out[b] = reduce == PoolReduce::Max ? std::max(out[b], row[j]) : out[b] + row[j];
                }
            }
            if (reduce == PoolReduce::Mean) {
                const int n = p.row_edges[static_cast<std::size_t>(a) + 1] - p.row_edges[static_cast<std::size_t>(a)];
                for (int b = 0; b < C; ++b)
                    out[b] /= static_cast<float>(n) * static_cast<float>(p.col_edges[static_cast<std::size_t>(b) + 1] - p.col_edges[static_cast<std::size_t>(b)]);
            }
        }
    });
    return p;
}

}  // namespace attn
