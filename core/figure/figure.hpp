// figure.hpp: one model of what a figure shows, for every source of attention: a scene computed
// by core (formats/scene.hpp), attention imported from a model's file (formats/import.hpp),
// and a model run live by core (model/model.hpp). The views and the exports read only this, and they ask it what
// it has (has()) instead of asking where it came from.
//
//   source ──▶ Figure ──▶ a layout per view (no GL, no ImGui) ──▶ GPU renderer / SVG writer
//
// [SECTION] What a source can give
// [SECTION] The figure
#pragma once

#include "import.hpp"
#include "model.hpp"
#include "scene.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attn {

struct Attribution;  // why.hpp
struct Lens;
struct Patching;
struct TokenProbs;

// [SECTION] What a source can give -----------------------------------------------------------
// Every figure has the weights of its shown maps; these are what some sources add.
enum class Detail : unsigned {
    Scores = 1u << 0,       // QKᵀ and the scaled, masked scores before the softmax
    Projections = 1u << 1,  // Q, K, V of each head (the Steps view's pipeline)
    Input = 1u << 2,        // X (and X_kv) the attention block reads
    Output = 1u << 3,       // each head's output, the concatenation and the output after W_o
    Layers = 1u << 4,       // stacks × layers × heads of maps to choose from (the model view)
    Scene = 1u << 5,        // the scene it was computed from (exported as scene JSON)
    Queries = 1u << 6,      // Q and K of each head as the scores read them, without X, V or the outputs (a
                            // layer's kept Q and K: a long text's, a served model's): Steps from Q on, the Q–K space
};
constexpr unsigned operator|(Detail a, Detail b) { return static_cast<unsigned>(a) | static_cast<unsigned>(b); }
constexpr unsigned operator|(unsigned a, Detail b) { return a | static_cast<unsigned>(b); }
// What a computed scene gives: everything but layers.
inline constexpr unsigned kSceneDetails = Detail::Scores | Detail::Projections | Detail::Input | Detail::Output | Detail::Scene;

// A model run live: the model, what it read and what it computed. Its maps are the figure's
// layers; one head's map also has its block's whole pipeline, recomputed on demand.
struct LiveRun {
    std::shared_ptr<const LoadedModel> model;
    RunInput input;
    RunResult result;
    std::vector<NextToken> top;  // the likeliest next tokens (models with an LM head), or a classifier's labels
    // A vision model's run: the picture as the model saw it (image.hpp sized_picture), its
    // patches input.patch_rows rows of input.patches.rows() / patch_rows
    std::shared_ptr<const Image> picture;
    // A vision-language model's run (idefics3, smolvlm): `picture` is the picture as its tiles
    // cover it (tile_rows × tile_cols of them, side by side), or its one view; global_picture the
    // whole as the last view saw it (nullptr: not split). Its image tokens are the views' in order.
    std::shared_ptr<const Image> global_picture;
    int tile_rows = 0, tile_cols = 0;
    // Maps on demand (!input.keep_maps): per stack, every map pooled to at most
    // kThumbnailBlocks² blocks, each the maximum of the weights it covers (map_pooled), index
    // layer·heads + head: the model view's thumbnails.
    std::vector<std::vector<Matrix>> thumbnails;
};
inline constexpr int kThumbnailBlocks = 64;

// The layers of a model a server runs (a model PyTorch runs: web/state/served_state.hpp) whose Q
// and K have come, each shown as a trace computed here (the same kernel as a live run's). One
// stack. A long text's (on_demand): its maps on demand, the model view's thumbnails as the server
// pooled them, a layer a long trace; a short text's: beside the whole maps (Figure::layers), a
// layer every row, for Steps and the Q–K space.
struct RemoteMaps {
    std::vector<Matrix> thumbnails;  // layers·heads, index layer·heads + head: ≤ kThumbnailBlocks² blocks, each their max
    std::map<int, std::shared_ptr<const KeptHeads>> layers;  // layer → its heads' Q and K, mask, scale (no RowStats)
    int d_model = 0;
    bool on_demand = true;
};

// What a live model's config says of one stack, which its maps alone cannot tell: a map's zeros
// do not say whether a key was masked or merely unattended.
struct StackArchitecture {
    std::vector<int> window;  // per layer: the sliding window W (query i sees keys i − W + 1 … i), 0 = full attention
    int kv_heads = 0;         // K/V heads: query head h reads K/V head h / (heads / kv_heads) (grouped-query
                              // attention); 0 = not known
};

// [SECTION] The figure -----------------------------------------------------------------------
// Copies are cheap (the numbers are shared and never changed in place): the PNG export draws a
// copy of the state on screen.
struct Figure {
    std::string name;   // what titles and exported files are named after (scene, model or file)
    std::string file;   // the file it was read from; "" when computed here
    unsigned details = 0;

    // The heads the lines, heatmap and Steps views show: T_q × T_k maps over the tokens as shown,
    // one layer of one stack (or one aggregated map). Weights always; the rest as `details` says
    // (a trace without Detail::Projections holds only attention.heads[h].weights).
    std::shared_ptr<const Trace> shown;
    // With Detail::Layers: every map of the source, stacks × layers × heads, and per stack
    // whether it is causal (every map's upper triangle exactly zero: a decoder's mask).
    std::shared_ptr<const ImportedAttention> layers;
    std::vector<bool> causal;
    // Per stack, from a live model's config; empty for an import file (its maps are all it has).
    std::vector<StackArchitecture> architecture;
    // With Detail::Scene: the scene `shown` was computed from.
    std::shared_ptr<const Scene> scene;
    // A live model's run (with Detail::Layers), or nullptr.
    std::shared_ptr<const LiveRun> live;
    std::shared_ptr<const HeadImportance> importance;  // the live run's heads, once measured (model.hpp)
    std::shared_ptr<const Attribution> attribution;    // the live run's heads' direct logit attribution (why.hpp)
    std::shared_ptr<const Lens> lens;                  // the live run's logit lens, once read (why.hpp)
    std::shared_ptr<const TokenProbs> probs;           // the live run's tokens' probabilities, once read (why.hpp)
    std::shared_ptr<const Patching> patching;          // the live run patched into `compare`'s, once run (why.hpp)
    std::shared_ptr<const LiveRun> compare;            // the same model on a second text (the Compare view)
    std::shared_ptr<const RemoteMaps> remote;          // a served model's layers' Q and K (with Detail::Layers), or nullptr

    bool empty() const { return shown == nullptr; }
    bool has(Detail d) const { return (details & static_cast<unsigned>(d)) != 0; }
    // A live run past kMapsKeptUpTo tokens, or a served long text: `layers` has the stacks'
    // tokens but no map; a layer's maps come from live_layer_trace (a long trace), the model
    // view's from thumbnails().
    bool maps_on_demand() const;
    const std::vector<Matrix>& thumbnails(int stack) const;  // maps on demand only
    // What a layer's maps are recomputed from (maps on demand): nullptr for a served layer whose
    // Q and K have not come yet. Shared: a long trace reads the block's Q and K where they are.
    std::shared_ptr<const KeptHeads> kept_layer(int stack, int layer) const;
    const Trace& trace() const;  // an empty trace when empty()

    int stack_count() const { return layers ? static_cast<int>(layers->stacks.size()) : 0; }
    const AttentionStack& stack(int i) const { return layers->stacks[static_cast<size_t>(i)]; }
    // The stack's layer's sliding window (0: none, or not known) and the stack's K/V heads (its
    // heads when they share none, or when not known).
    int window_of(int stack, int layer) const;
    int kv_heads_of(int stack) const;
};

// Query q's row of one head's weights, or of the heads' mean (head outside 0 … heads − 1): what
// the heatmap and the Image view show of a row (T_k numbers).
std::vector<float> head_row(const Trace& trace, int head, int q);
// The same of layer `layer` of `stack` where the figure's maps are on demand (a long text's: the
// row recomputed from the layer's kept Q and K, exact; the trace has no weights), else head_row.
std::vector<float> figure_row(const Figure& figure, const Trace& trace, int stack, int layer, int head, int q);

// A computed scene: its trace, every detail but layers.
Figure scene_figure(Scene scene, Trace trace);
// Attention with layers (an import file, a model run): no map is shown until show_maps().
// Throws SceneError when a stack has no layer, head or token (the views need one of each).
// `causal`: per stack, whether it is a causal self-attention, when the source knows (a model
// run); else (empty) read off the maps (stack_is_causal).
Figure layered_figure(std::shared_ptr<const ImportedAttention> layers, std::string file, std::vector<bool> causal = {});
// A live model's run: its maps as layers (stacks named as in SPEC.md §3), no map shown yet.
Figure live_figure(std::shared_ptr<const LiveRun> run);
// The maps a layered figure shows now (the choice of stack, layer, head or aggregate), and what
// they have beyond the weights (a live model's one layer: Scores | Projections | Input | Output).
void show_maps(Figure& figure, Trace shown, unsigned shown_details = 0);
// One layer of a live figure's stack with its block's whole pipeline (block_trace): X, Q, K, V,
// scores, the mask, weights, outputs, concat and W_o, over the tokens as `queries` / `keys` say.
// Maps on demand: the layer as a long trace from what it kept (kept_layer, not nullptr).
Trace live_layer_trace(const Figure& figure, int stack, int layer, std::vector<std::string> queries,
                       std::vector<std::string> keys);

// A self-attention stack whose every map is zero above the diagonal: a decoder's causal mask.
bool stack_is_causal(const AttentionStack& stack);

}  // namespace attn
