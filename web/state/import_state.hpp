// import_state.hpp: a figure with layers (an import file, SPEC.md §3) as the app shows it: the
// stack / layer / head chosen, the aggregate, subword merging, and a file's loading progress.
// No ImGui here; web/ui/model_view.cpp draws the choice.
//
// The figure's stacks are in AppState::figure (figure.hpp, Detail::Layers); show_import() makes
// the figure's shown maps from the choice, which the lines, heatmap and Steps views draw. A
// decoder stack whose upper triangle is exactly zero is shown as masked attention, so its
// masked cells are hatched.
#pragma once

#include "figure.hpp"
#include "import.hpp"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

struct AppState;

// What the figure shows of the stack: one map (layer, head), a reduction over the chosen
// heads and layers, or the attention rollout up to the chosen layer (self-attention only).
enum class ImportShow { Head, Aggregate, Rollout };

// A file on its way in: bytes arrive (browser: read or fetched in pieces), then it is parsed
// one frame after "parsing…" was drawn, so a big file never freezes a blank progress bar.
struct ImportLoad {
    std::string name;
    long long done = 0, total = 0;  // bytes; total 0 = unknown
    bool parsing = false;           // every byte is in `bytes`
    int frames_shown = 0;           // frames drawn since parsing became true
    std::string bytes;
};

// Rollout multiplies T×T matrices layer after layer: computed once per (figure, stack, reduce).
struct RolloutCache {
    const ImportedAttention* layers = nullptr;
    int stack = -1;
    HeadReduce reduce = HeadReduce::Mean;
    std::vector<Matrix> maps;  // per layer
};

struct ImportView {
    int revision = 0;                // bumps per import (the thumbnail texture follows it)
    // The choice (a link state can carry these plain fields).
    int import_stack = 0, import_layer = 0, import_head = 0;
    ImportShow show = ImportShow::Head;
    HeadReduce reduce = HeadReduce::Mean;
    std::vector<bool> layers_on, heads_on;  // which layers / heads enter the aggregate
    bool merge_words = false;               // subword tokens merged into words
    bool rows_scaled = false;               // the model grid: each thumbnail row scaled to its largest weight (a thin stripe shows)
    // A live model with learned sinks: its head shown through its pipeline (the Steps, Q–K and
    // Explain views, the sink a term of the softmax) rather than as maps with a sink key.
    bool sink_pipeline = false;
    // Maps on demand from a server (figure.hpp RemoteMaps): a layer chosen whose Q and K have not
    // come waits here (-1: none) while the choice stays on the map shown (shown_*), so what is
    // drawn is always what the choice says; the served session asks for it and then selects it.
    int wanted_layer = -1, wanted_head = 0;
    int shown_layer = 0, shown_head = 0;
    std::optional<ImportLoad> load;
    RolloutCache rollout;
};

// Parses `text` as an import file. On success it replaces the import, opens the model view on
// the first stack and returns true; on failure st.error says "NAME: where: what" and the
// figure and any earlier import stay as they were.
bool import_attention(AppState& st, std::string_view text, const std::string& name);
// Shows a figure with layers (an import, a live model's run): with keep_choice the stack, map
// and aggregate chosen stay (a live model's next run); else the model view opens on the first
// map, or on the link's.
void show_layered_figure(AppState& st, Figure figure, bool keep_choice);
// A dropped or opened file: an import file or else a scene, as file_kind (import.hpp) decides.
bool open_file_text(AppState& st, std::string_view text, const std::string& name);
// Reads a file from disk and opens it (desktop: the path field and dropped files); a folder
// opens as a model (model_state.hpp).
bool open_file_path(AppState& st, const std::string& path);

// Bytes arriving for a file (done of total, total 0 when unknown); then all of them.
void import_progress(AppState& st, const std::string& name, long long done, long long total);
void import_bytes(AppState& st, const std::string& name, std::string bytes);
void import_failed(AppState& st, const std::string& name, const std::string& message);
// Once a frame: a live model with learned sinks shows its head the way the current view reads
// it (ImportView::sink_pipeline), shown again when the view changes sides.
void follow_sink_view(AppState& st);
// Once a frame, before the UI: parses a file whose bytes are all in.
void advance_import_load(AppState& st);

// Makes the figure's shown maps from the choice (after changing any field of ImportView).
void show_import(AppState& st);
// Selects one map of the current stack and shows it in the lines / heatmap / Steps views.
void select_import_map(AppState& st, int layer, int head);
// Another stack, its choices cleared, on one of its maps (its first): shown once (a long text's
// layer is made from its Q and K each time it is shown).
void select_import_stack(AppState& st, int stack, int layer = 0, int head = 0);
// A link's map "STACK:LAYER:HEAD" (link_state.hpp), numbers 1-based; nullopt when malformed.
struct ImportMapRef {
    std::string stack;
    int layer = 1, head = 1;
};
std::optional<ImportMapRef> parse_import_map(std::string_view text);
// Shows st.link_map of the import now in, in st.link_map_view, then forgets it. A map the file
// does not have leaves the first map shown and says so in st.error ("link: map: ..."). Without
// a map, a live model's link (st.link_view_waits) still opens its view, on the first map.
void apply_link_map(AppState& st);
// Whether the chosen stack of the figure can show a rollout (self-attention with layers).
bool rollout_allowed(const AppState& st);
// Leaves import mode (the inputs' own scene comes back).
void close_import(AppState& st);

// The "import" object of the state the browser tests read.
void add_import_json(const AppState& st, nlohmann::json& out);

}  // namespace attn
