// libFuzzer target: any bytes given to the import reader (JSON, or .safetensors:
// attention_file.hpp) either give attention that keeps every promise of import.hpp (shapes,
// finite softmax rows, limits) and survives every derived map (aggregates, rollout, merged
// words), or a SceneError (a ModelError for a broken .safetensors header). Nothing else may
// escape. file_kind gives the verdict of parsing the input whenever it is a JSON object
// (file_kind_check.hpp).
#include "attention_file.hpp"
#include "files.hpp"
#include "import.hpp"
#include "file_kind_check.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

void require(bool ok) {
    if (!ok) __builtin_trap();
}

// Averages of softmax rows and fully masked (all 0) rows: each row sums to something in [0, 1].
bool rows_are_partial_distributions(const attn::Matrix& m, float tolerance) {
    if (!m.allFinite() || m.size() == 0) return false;
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        const float sum = m.row(i).sum();
        if (!(sum >= -tolerance && sum <= 1 + tolerance)) return false;
    }
    return true;
}

bool rows_are_distributions(const attn::Matrix& m, float tolerance) {
    if (!m.allFinite()) return false;
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        const float sum = m.row(i).sum();
        if (!(std::fabs(sum - 1) <= tolerance || std::fabs(sum) <= tolerance)) return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    check_file_kind(text);  // import or scene: the same verdict as parsing it
    attn::ImportedAttention imported;
    try {
        imported = attn::read_import_file(text, "fuzz.safetensors");
    } catch (const attn::SceneError&) {
        return 0;
    } catch (const attn::ModelError&) {
        require(attn::is_safetensors(text));  // only the .safetensors header's reader throws it
        return 0;
    }
    require(!imported.stacks.empty());
    for (const attn::AttentionStack& s : imported.stacks) {
        require(s.layers >= 1 && s.layers <= attn::kMaxImportLayers);
        require(s.heads >= 1 && s.heads <= attn::kMaxImportHeads);
        require(s.maps.size() == static_cast<size_t>(s.layers * s.heads));
        require(!s.queries.empty() && !s.keys.empty());
        if (s.is_self()) require(s.queries == s.keys);
        for (const attn::Matrix& m : s.maps) {
            require(m.rows() == static_cast<Eigen::Index>(s.queries.size()));
            require(m.cols() == static_cast<Eigen::Index>(s.keys.size()));
            require(rows_are_distributions(m, 0.011f));
            require(m.minCoeff() >= -0.011f && m.maxCoeff() <= 1.011f);
        }
        // Derived maps: keep each input fast.
        if (static_cast<size_t>(s.layers * s.heads) * s.queries.size() * s.keys.size() > (1u << 18)) continue;
        for (attn::HeadReduce reduce : {attn::HeadReduce::Mean, attn::HeadReduce::Max}) {
            const attn::Matrix a = attn::aggregate(s, {}, {}, reduce);
            require(a.allFinite());
            if (reduce == attn::HeadReduce::Mean) require(rows_are_partial_distributions(a, 0.011f));
            if (s.is_self())
                for (const attn::Matrix& r : attn::attention_rollout(s, reduce)) require(rows_are_distributions(r, 1e-3f));
        }
        const std::vector<attn::Word> qw = attn::merge_subwords(s.queries), kw = attn::merge_subwords(s.keys);
        require(rows_are_partial_distributions(attn::merge_attention(s.maps[0], qw, kw), 0.011f));
        for (const std::string& t : s.queries) (void)attn::display_token(t);
    }
    return 0;
}
