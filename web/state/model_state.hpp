// model_state.hpp: a model run live in the app (SPEC.md §5): its files on their way in, its
// weights loading, and runs on the reader's text, all in slices between frames so the page
// stays responsive. A finished run becomes the figure (figure.hpp live_figure), whose maps the
// import choice (import_state.hpp) shows: one head's map with its block's whole pipeline.
// No ImGui here; web/ui/live_panel.cpp draws the controls.
//
// [SECTION] The session
// [SECTION] Opening a model
// [SECTION] Running it
// [SECTION] State for the tests
#pragma once

#include "figure.hpp"
#include "model.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

struct AppState;

// [SECTION] The session ----------------------------------------------------------------------

// A model's files arriving in the browser: the page reads each small file whole into a buffer
// the app owns (model_file_buffer), and of each checkpoint file only its header
// (model_file_head): its weights are read later a window at a time (ModelLoader, transformer.hpp),
// so a checkpoint is never held whole beside its packed weights.
struct ModelFilesLoad {
    std::string folder;
    std::map<std::string, ByteBuffer> buffers;
    std::map<std::string, std::size_t> sliced;  // a checkpoint file's size, by name (its buffer: the header)
    long long done = 0, total = 0;  // bytes
};

struct ModelJob;  // a run in progress (model_state.cpp)
class LensRun;    // why.hpp
class PatchingRun;
class TokenProbsRun;

// The text's tokens coloured by how likely the model found each (why.hpp TokenProbs): by its
// probability, or by its surprisal −log₂ p.
enum class TokenShade { Off, Probability, Surprisal };

// The experiments every run of the session makes (transformer.hpp Interventions), as a reader
// sets them in the panel, the model view or a link.
struct ModelExperiment {
    std::string knockout;     // heads as links write them: "2:3,cross_attention:1:2" (from 1)
    Ablation ablation = Ablation::Zero;
    std::vector<int> hidden;  // token positions from 0 (marian: the source's); those past the text are ignored
    bool importance = false;  // measure every head's importance after each run (HeadImportanceRun)
    bool attribution = false; // each head's direct logit attribution to the prediction, after each run (why.hpp)
    bool lens = false;        // the logit lens of every layer and position, after each run (why.hpp)
    bool patching = false;    // activation patching from the text into the corrupted text, after each run (why.hpp)
    TokenShade probs = TokenShade::Off;  // each token's probability, after each run (decoder-only models)
    // Attribution's and patching's tokens (one token as text, or #ID, as --attribute takes it):
    // "" = the prediction; the contrast "" = none (attribution), the corrupted text's prediction (patching)
    std::string target, contrast;
    std::string corrupted;    // patching's corrupted text, as many tokens as the text; "" = the Compare text
};

// Generation (gpt2): the text continued token by token from the KV cache, greedily or sampled
// (transformer.hpp pick_token), then one step at a time on the scrubber: step s shows the
// prompt and the first s generated tokens, whose last row is the query that step computed, and
// the next-token list that step sampled from.
struct ModelGeneration {
    Sampling sampling;          // temperature 0: greedy
    int tokens = 20;            // how many to generate
    std::vector<int> ids;       // the prompt's and the generated tokens, once generated (else empty)
    int prompt = 0;             // how many of `ids` are the prompt's
    int step = 0;               // generated tokens shown: 0 … ids.size() − prompt
    bool requested = false;     // Generate was pressed (or a link asked): the next run generates
    std::optional<int> link_step;  // a link's step, shown once its generation is done (else the last)
    int generated() const { return ids.empty() ? 0 : static_cast<int>(ids.size()) - prompt; }
};

// The picture a vision model runs on (ViT, CLIP, SigLIP, DINOv2): a file chosen, dropped or
// opened by its path, decoded as `attnviz run --image` decodes it (image.hpp).
struct ModelPicture {
    std::string name;
    Image image;
};

// A conversation a decoder model reads through its chat template (chat.hpp), as `attnviz run
// --chat` does: the turns, rendered with add_generation_prompt unless the last is the
// assistant's; the text the template wrote is what the model runs on.
struct ChatTurn {
    std::string role = "user", content;
};
struct ModelChat {
    bool on = false;
    std::vector<ChatTurn> turns;
    std::string prompt;  // the last run's text, as the template wrote it
};

// A vision-language model's picture as its language model reads it (model.hpp picture_input,
// picture_rows): the views through the tower and the connector, kept while the picture and the
// model stay (a new text runs the language model alone), with what the Picture view shows.
struct PictureRows {
    std::shared_ptr<const ModelPicture> of;
    std::shared_ptr<const LoadedModel> model;
    Matrix rows;                                  // RunInput::image_rows
    std::shared_ptr<const Image> tiles, global;   // LiveRun::picture, global_picture
    int tile_rows = 0, tile_cols = 0;
    int grid_rows = 0, grid_cols = 0;             // a view's patches (PictureInput's)
};

struct ModelSession {
    std::shared_ptr<ModelFilesLoad> reading;   // browser: files on their way in (a copy of the state shares them)
    std::shared_ptr<ModelLoad> loading;        // the weights being converted
    std::string loading_name;
    std::string error_before_load;             // st.error as the load began: past once the model is in (an error
                                               // that came during the load, such as a picture's, stays)
    // Browser: the checkpoint's window the weights wait for (ModelLoad::wanted), asked of the page
    // once: `slice_request` until web/ui/app.cpp passes it to platform::read_model_slice, `slice`
    // until its bytes are in (model_window, model_window_filled).
    std::optional<FileRange> slice_request, slice;
    int windows = 0;  // windows read for the model loading or in use (its checkpoint's, sliced)
    int partials = 0;  // a translation's or a generation's partial runs shown (each output token's as it appears), in all
    std::shared_ptr<const LoadedModel> model;  // the model in use, or nullptr
    // The built-in model (builtin.hpp) loading or in use, "" for a reader's own. The browser
    // build has no files compiled in: `builtin_request` asks the page for them (web/ui/app.cpp
    // passes it to platform::fetch_builtin_model), `builtin_fetching` names it while the page
    // fetches them (a second link to it then asks for nothing), and they arrive as a reader's
    // files do.
    std::string builtin, builtin_request, builtin_fetching;
    // A model by its Hub id (SPEC.md §6): `hub` names it once its files are in, while it loads and
    // is in use ("" for any other model). Asked for by a link (hf=), the page's ?hf=, the Hub dialog or
    // a Hub id typed where a folder's path goes (desktop): `hub_request` until web/ui/app.cpp
    // starts the fetch (platform::HubFetch, off the frame loop), then `fetching` shows its
    // progress until the model's files open (desktop: hub_fetch_done; the page hands them in as
    // a folder's) or its error is shown (hub_fetch_failed). `cancel`: the reader stopped it.
    std::string hub, hub_request;
    // The Hub model the page opened from memory, its storage full (not kept: said under the
    // model while it is the one in use).
    std::string hub_unstored;
    struct Fetching {
        std::string id, file;
        double file_done = 0, file_size = 0;  // bytes of `file`
        double done = 0, total = 0;           // bytes of all the files to fetch
        bool cancel = false;
    };
    std::optional<Fetching> fetching;
    // The Hub dialog (web/ui/live_panel.cpp): the suggested models' sizes as their repos' listings
    // give them (bytes, by id; the page looks them up when the dialog opens), and the models
    // stored (the page: in the browser's storage; desktop: in huggingface_hub's cache).
    std::map<std::string, double> hub_sizes;  // bytes; −1 not listed by the Hub, −2 the Hub not reached
    struct StoredHubModel {
        std::string id, commit;
        double bytes = 0;
    };
    std::vector<StoredHubModel> hub_stored;
    // A live scene's head to show once the model is in (live_scenes.hpp): the head whose
    // score of this kind is highest.
    std::optional<HeadKind> pick_head;

    // The reader's input: the text (the model's; marian's target) and marian's source. With
    // `translate`, marian generates its target greedily instead of reading `text`.
    std::string text, source;
    bool translate = true;
    std::shared_ptr<const ModelPicture> picture;  // a vision model's input (kept when models change)
    std::shared_ptr<const PictureRows> picture_rows;  // a vision-language model's, for `picture` (else stale)
    // The example pictures of the model opened last (its folder's or built-in files named
    // example-*.png: tiny-vit's), by file name; the panel offers them. `picture_wanted` names the one a
    // live scene or a link asks for: it becomes `picture` once the model's files are in.
    std::map<std::string, std::shared_ptr<const FileBytes>> examples;
    std::string picture_wanted;
    ModelChat chat;                               // a decoder model with a chat template: the conversation instead of `text`
    ModelExperiment experiment;
    ModelGeneration generation;
    std::string compare;  // a second text (gpt2, bert), run beside `text` for the Compare view; "" = none
    int input_revision = 0;                    // bumps on every edit
    int run_revision = -1;                     // the input revision last run (or refused)
    std::shared_ptr<ModelJob> job;             // the run in progress, or nullptr
    float job_progress = 0.0f;
    // After a run, while experiment.importance: its heads' importance, measured in slices
    // (the figure's run, whose maps stay shown), then the figure's `importance`.
    std::shared_ptr<HeadImportanceRun> importance;
    std::shared_ptr<const LiveRun> importance_of;
    // After a run, while experiment.lens: its logit lens, read in slices (LensRun reads the run,
    // which lens_of holds), then the figure's `lens`.
    std::shared_ptr<LensRun> lens;
    std::shared_ptr<const LiveRun> lens_of;
    // And while experiment.probs: its tokens' probabilities, read the same way, then the figure's `probs`.
    std::shared_ptr<TokenProbsRun> probs;
    std::shared_ptr<const LiveRun> probs_of;
    // And while experiment.patching, with a corrupted text (or a Compare text) of as many tokens:
    // the text's run patched into the corrupted text's, in slices (its own runs), then the
    // figure's `patching`.
    std::shared_ptr<PatchingRun> patching;
    std::shared_ptr<const LiveRun> patching_of;
    bool patching_stopped = false;  // the reader stopped it (cancel_patching): until the next run
    int last_run_frames = 0;                   // frames the last finished run took (1: it fit the frame that started it)
    double last_run_ms = 0;                    // and its time, from the edit to the figure
    int top_n = 10;                            // next tokens shown
    // The threads a run uses (set_model_threads, 1 … most_threads; desktop: --threads, every core
    // by default; the page: attnviz-page.js's choice; a page module without threads has one,
    // whatever is asked) and their pool, made by the first run with most_threads and set to
    // `threads`: a setting never starts or joins a thread (a page's Workers are started at load).
    int threads = kernels::Pool::hardware_threads();
    int most_threads = kernels::Pool::hardware_threads();
    std::shared_ptr<kernels::Pool> pool;       // a job keeps the one it started with
    // A run on a thread of its own, the frames never waiting for it (main.cpp: where the build has
    // threads), else in slices between frames within each frame's budget.
    bool background = false;

    bool active() const { return model != nullptr; }
    int threads_used() const { return kernels::Pool::threads_for(threads); }  // 1 in a module without threads
    bool busy() const {
        return !builtin_request.empty() || !builtin_fetching.empty() || reading || fetching || loading || job || importance || lens || probs || patching;
    }
};

// [SECTION] Opening a model ------------------------------------------------------------------

// Small public models a page can hold, suggested in the Hub dialog (their sizes: ModelSession::hub_sizes).
inline constexpr const char* kHubSuggestions[] = {
    "gpt2", "distilgpt2", "bert-base-uncased", "bert-base-chinese", "Helsinki-NLP/opus-mt-zh-en", "Helsinki-NLP/opus-mt-en-zh",
    "HuggingFaceTB/SmolLM2-135M", "HuggingFaceTB/SmolLM2-360M", "Qwen/Qwen2.5-0.5B", "Qwen/Qwen3-0.6B", "google/gemma-3-270m",
};

// The browser can give a model at most this much memory (wasm32, -sMAXIMUM_MEMORY=4GB, less
// what the app holds).
inline constexpr double kBrowserModelBytes = 3.5e9;

// The threads runs use from the next job on (clamped to 1 … ms.most_threads).
void set_model_threads(ModelSession& ms, int threads);

// The length of the text the figure shows of the session's model (its last run), or 0: the
// model's line states its activations, and a position past training, at it.
int shown_tokens(const AppState& st);

// Files by name: starts loading the weights (errors go to st.error; the figure stays).
void open_model_files(AppState& st, ModelFiles files);
// A picture's file (`bytes`: PNG, JPEG, GIF, BMP) for the vision model: decoded, kept as the
// session's picture, and the model runs on it. A file that is no picture: st.error names it,
// the picture before stays. With no vision model in use, st.error says to open one (the
// picture is kept for it).
void set_model_picture(AppState& st, const std::string& name, std::string_view bytes);
// One of the model's example pictures (ModelSession::examples) as the picture; "" when it has it,
// else what is wrong (no such example).
std::string set_example_picture(AppState& st, const std::string& name);
// A live scene's or a link's example picture: now when no model's files are on their way (st.error
// names a picture the model opened last does not have), else once they are in
// (ModelSession::picture_wanted).
void want_example_picture(AppState& st, const std::string& name);
// Desktop: a folder path, or a Hub id ORG/NAME[@REVISION][:QUANT] where no such folder is (then a
// request: ModelSession::hub_request). Returns false (st.error set) when it is neither.
bool open_model_folder(AppState& st, const std::string& path);
// A model by its Hub id (nothing when it is already on its way or in use): a request
// (ModelSession::hub_request).
void open_hub_model(AppState& st, const std::string& id);
// The fetch of ModelSession::fetching: how far it is; it ended (desktop: its snapshot folder
// opens, named by the id); or its one-line error is shown (the figure stays).
void hub_fetch_progress(AppState& st, const std::string& file, double file_done, double file_size, double done, double total);
// Browser, before the download: whether the files (sizes from the Hub's listing) fit in the page
// (as model_files_begin counts); false: the fetch ends with that error, nothing downloaded.
bool hub_fetch_fits(AppState& st, double total_bytes, double weight_bytes);
// Browser: what the page found for the Hub dialog: a model's size (its weights and tokenizer
// files, from its listing), and the models stored ([{"id", "commit", "bytes"}]).
void hub_model_size(AppState& st, const std::string& id, double bytes);
void hub_fetch_unstored(AppState& st, const std::string& id);
void hub_stored_models(AppState& st, std::string_view json);
void hub_fetch_done(AppState& st, const std::string& snapshot);
void hub_fetch_failed(AppState& st, const std::string& message);
// A built-in model by name (nothing when it is already loading or in use): natively its
// compiled-in files; in the browser a request to the page (ModelSession::builtin_request).
void open_builtin_model(AppState& st, const std::string& name);
// Browser: the page announces the files (the bytes it hands whole: every file but the
// checkpoint's, and their headers; and the size of the checkpoint's tensors in memory, read
// from its headers: F32 4 bytes a number, F16 and BF16 2), gets a buffer per file (a checkpoint
// file: for its header, its size given), reports progress, then ends. A model that needs more
// memory than the browser allows is refused here, before any byte is read.
bool model_files_begin(AppState& st, const std::string& folder, double total_bytes, double weight_bytes);
std::uint8_t* model_file_buffer(AppState& st, const std::string& name, double size);
std::uint8_t* model_file_head(AppState& st, const std::string& name, double head_size, double file_size);
void model_files_progress(AppState& st, double done);
void model_files_end(AppState& st);
// A file could not be read (the files, or a window of the checkpoint): nothing is loaded.
void model_files_failed(AppState& st, const std::string& message);
// Browser: where the bytes of `range` go, when it is still the window the weights wait for
// (else nullptr: the model was closed or replaced), then: they are there (false: no weights
// were waiting for them).
std::uint8_t* model_window(AppState& st, const FileRange& range);
bool model_window_filled(AppState& st);
void close_model(AppState& st);

// The map of ms.pick_head (the head with the highest score of that kind) becomes st.link_map,
// shown with the next run; then pick_head is forgotten. Called once a model is in.
void apply_pick_head(AppState& st);

// [SECTION] Running it -----------------------------------------------------------------------

// After editing text / source / translate / experiment.
void model_input_changed(AppState& st);
// The run in progress stops (its thread after its slice); the figure of the last run stays, and
// the text is not run again until it is edited.
void cancel_model_run(AppState& st);
// Patching stops (its runs are dropped): its grids stay empty until the next run.
void cancel_patching(AppState& st);
// Generation: Generate (the next run continues the text: ModelGeneration), the scrubber's step,
// and forgetting the generated tokens (an edited text does).
void request_generation(AppState& st);
void show_generation_step(AppState& st, int step);
void clear_generation(AppState& st);
// The model view's and panel's toggles: a head in or out of the knockout (experiment.knockout
// rewritten, or a served model's: served_state.hpp), a token hidden or shown. Both rerun the model.
void toggle_knockout(AppState& st, const HeadRef& head);
void toggle_hidden(AppState& st, int token);
// The session's experiment as this model's heads, or a served model's (none when it has no model
// or the text does not parse: st.error says why).
std::vector<HeadRef> knocked_heads(const AppState& st);
// Once a frame: converts weights, runs the model, or finishes a run into the figure, for about
// `budget_seconds` of work: whole slices (a layer's attention or feed-forward block, a token
// generated), as many as fit, at least one. The app's frame calls it between the controls, which
// may have just changed the model's input (a key in the text box), and the figure, which then
// shows the run in the same frame (web/ui/panels.cpp draw_app; the figure-only embed calls it
// before its figure, link_panel.cpp).
void advance_model(AppState& st, double budget_seconds);
// Its first part: the loader's steps (false while it loads, or when the load failed). A window
// filled between frames (App::model_window_filled) takes only this part: a run, and the figure it
// changes, belong to a frame, which then draws what it shows.
bool advance_loading(AppState& st, double budget_seconds);
// The app's budget: slices that fit in 25 ms, at least one (GPT-2 small's longest, a feed-forward
// block, was 75 ms in wasm; with its weights packed at load the page's worst frame while it runs
// is 34–42 ms, docs/BENCHMARKS.md), so frames stay under 100 ms.
constexpr double kModelFrameSeconds = 0.025;
// The works shown as the reader types (the tokens' probabilities, the logit lens) take at most
// this much of a frame, so that a keystroke's frames stay within 16 ms (docs/BENCHMARKS.md, "a
// live model on every keystroke"); patching and the heads' importance, with their progress, the
// whole budget.
constexpr double kLiveWorkSeconds = 0.010;

// [SECTION] State for the tests --------------------------------------------------------------

void add_model_json(const AppState& st, nlohmann::json& out);

}  // namespace attn
