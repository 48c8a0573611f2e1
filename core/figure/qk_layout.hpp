// qk_layout.hpp: the Q–K space view (issue 34 §1, AttentionViz) laid out without GL or ImGui.
// One head's queries and keys as points of one plane (core/figure/qk_space.hpp: the keys moved
// onto the queries' centroid, both scaled to the same mean norm, then PCA or t-SNE), queries as
// circles and keys as squares, labelled by token; the query pointed at or pinned draws lines to
// the keys it attends to, as wide as their weights. Or every head of the layer as small panels
// (PCA), each a button to its own plane. web/ui/qk_view.cpp draws it.
//
//   1. qk_plane(trace, head, projection)            the head's plane and what the view states of it
//   2. lay_out_qk(input, measure) / qk_items(...)    one plane: where each point goes, what is drawn
//   3. lay_out_qk_grid(...) / qk_grid_items(...)     every head of the layer
//
// [SECTION] Planes
// [SECTION] One head
// [SECTION] Every head
#pragma once

#include "figure_layout.hpp"
#include "qk_space.hpp"
#include "scene.hpp"

#include <array>
#include <string>
#include <vector>

namespace attn {

// [SECTION] Planes ---------------------------------------------------------------------------------

enum class QkProjection { Pca, Tsne, Heads };  // Heads: every head of the layer, by PCA
// t-SNE past this many points (T_q + T_k) would keep the page busy for seconds: PCA instead
// (1024 points: about 2 s in wasm). Barnes–Hut from kQkBarnesHutFrom points: exact below.
inline constexpr int kQkTsneMaxPoints = 1024, kQkBarnesHutFrom = 400;
inline constexpr std::uint64_t kQkTsneSeed = 1;

// A head's plane: its points and what the view says of them.
struct QkPlane {
    int T_q = 0, T_k = 0;
    Matrix points;                      // (T_q+T_k)×2, queries first
    bool tsne = false;                  // t-SNE (else PCA)
    std::array<float, 2> explained{};   // PCA: each axis's share of the variance
    float translation_norm = 0.0f;      // |t|: how far the keys moved onto the queries' centroid
    float query_scale = 1.0f;           // c: queries ×c, keys ×1/c
    float correlation = 0.0f;           // Pearson r of q·k against the distance in the plane, allowed pairs
};

// The head's Q and K as the scores read them (after the q/k norm and RoPE where the model has
// them; a long trace's every query, head_queries). t-SNE asked for more points than
// kQkTsneMaxPoints gives PCA (QkPlane::tsne says which).
QkPlane qk_plane(const Trace& trace, int head, QkProjection projection);

// [SECTION] One head -------------------------------------------------------------------------------

// The view's words: printf formats in the UI's language (English defaults, as the UI's table).
struct QkWords {
    std::string what_pca = "Head %d: its %d queries and %d keys as the scores read them, by PCA. The axes hold %d%% and %d%% of the "
                           "variance; distances are to scale.";                      // head, T_q, T_k, %, %
    std::string what_tsne = "Head %d: its %d queries and %d keys as the scores read them, by t-SNE (perplexity %d, seed %d). "
                            "Neighbours are kept; distances are not to scale.";       // head, T_q, T_k, perplexity, seed
    std::string too_many = " t-SNE is computed for up to %d points and these are %d: PCA shown.";  // a separator first
    std::string normalized = "As AttentionViz does: the keys moved by |t| = %s onto the queries' centroid (every softmax row "
                             "unchanged), then queries \xc3\x97%s and keys \xc3\x97%s to the same mean length (every q\xc2\xb7k unchanged).";
    std::string correlation = "q\xc2\xb7k against the distance in the plane: r = %s (negative: the nearer the key, the more attention).";
    std::string queries = "queries", keys = "keys";
    std::string head_title = "head %d \xc2\xb7 r = %s";                            // the overview's panels: head, r
};

struct QkInput {
    const Trace* trace = nullptr;
    int head = 0;
    const QkPlane* plane = nullptr;
    Box box;                            // the figure's box
    float scale = 1.0f;
    bool dark = true;
    int query = -1;                     // pointed at or pinned: its lines to the keys
    int key = -1;                       // a key pointed at: outlined, with the queries that attend to it most
    std::vector<float> weights;         // query's row of weights (T_k), when query ≥ 0
    // Words in the UI's language, filled in: what the plane is, what was done to Q and K, the
    // correlation, and the legend's two entries.
    std::string what, normalized, correlation, queries = "queries", keys = "keys";
};

struct QkLayout {
    Box plot;                           // where the points go
    std::vector<std::array<float, 2>> at;  // each point's centre, queries first
    float radius = 0.0f;
    float text_y = 0.0f;                // the statements' first line
    // The point under (x, y): a query (0 … T_q−1) or a key (T_q …), the nearest; of points at one
    // place the first (a query before a key); −1 none.
    int hit(float x, float y) const;
};

// Fills input's what, normalized, correlation, queries and keys from its plane and head;
// `asked`: the projection the reader chose (t-SNE past kQkTsneMaxPoints says it fell back).
void qk_fill_words(QkInput& input, const QkWords& words, QkProjection asked);
// A number as the words write it: 3 significant digits ("-0.734", "4.78").
std::string qk_number(float v, int digits = 3);

QkLayout lay_out_qk(const QkInput& input, const TextMeasure& measure);
// The statements, the frame, the lines of the selected query (under the points), the points,
// the labels that find room (the selected query's and its keys' first), the legend.
std::vector<Item> qk_items(const QkLayout& layout, const QkInput& input, const TextMeasure& measure);

// [SECTION] Every head -----------------------------------------------------------------------------

struct QkGridInput {
    const std::vector<QkPlane>* planes = nullptr;  // one per head, PCA
    Box box;
    float scale = 1.0f;
    bool dark = true;
    int current = 0;                    // the head the single view shows: outlined
    int hover = -1;
    std::vector<std::string> titles;    // per head: "head 2 · r = −0.61" (qk_grid_titles)
    std::string heading;                // above the panels: "layer 2 · every head, by PCA …" ("": none)
    std::string queries = "queries", keys = "keys";  // the legend under them
};
std::vector<std::string> qk_grid_titles(const std::vector<QkPlane>& planes, const QkWords& words);

struct QkGridLayout {
    std::vector<Box> panels;            // per head
    float title_h = 0.0f;
    float heading_y = 0.0f, legend_y = 0.0f;  // the heading's and the legend's lines
    int hit(float x, float y) const;    // the head under (x, y), −1 none
};

QkGridLayout lay_out_qk_grid(const QkGridInput& input, const TextMeasure& measure);
std::vector<Item> qk_grid_items(const QkGridLayout& layout, const QkGridInput& input, const TextMeasure& measure);

}  // namespace attn
