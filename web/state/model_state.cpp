// model_state.cpp: see model_state.hpp.
#include "model_state.hpp"
#include "text.hpp"

#include "app_state.hpp"
#include "builtin.hpp"
#include "hub.hpp"
#include "why.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <thread>

namespace attn {

// [SECTION] The session ----------------------------------------------------------------------

// A run in progress. gpt2 and bert: one forward. marian translating: the encoder over the
// source, then the decoder one token per slice (KV cache) until </s> or kMaxNew tokens, then
// one forward over the whole target for every step's maps. gpt2 generating: the prompt into
// the decoder, then a token per slice as translating does (sampled), then one forward.
struct ModelJob {
    static constexpr int kMaxNew = 32;  // as `attnviz run`'s default --max-new
    int revision = 0;
    RunInput input;
    std::unique_ptr<Forward> encoder;  // translating: the encoder's pass
    std::unique_ptr<Decoder> decoder;  // translating, generating: the KV cache
    int max_new = kMaxNew;             // tokens the decoder may add
    std::optional<Sampling> sampling;  // generating: how each token is picked (translating: the argmax)
    SplitMix64 rng{0};
    int prompt = 0;                    // generating: the prompt's tokens
    int fed = 0;                       // generating: the prompt's tokens in the cache so far
    std::vector<float> logits;         // the decoder's last
    std::unique_ptr<Forward> preview;  // translating: the target so far, shown as it grows
    std::optional<RunInput> partial_input;  // a preview's input, once it is done
    std::optional<RunResult> partial;       // and its run: shown, then generation goes on
    std::unique_ptr<Forward> forward;  // the run whose maps the figure shows
    std::shared_ptr<const Image> picture;  // a vision model's: the picture as it sees it (LiveRun::picture)
    // A vision-language model's picture: its rows when the session has them; else the picture to
    // cut (the job's first slice, off the frame), then its views, each through the tower a
    // sub-block a slice, before the decoder or `forward` begins (they read the rows), and what
    // they make (kept by the session once shown)
    std::shared_ptr<const PictureRows> picture_rows;
    std::shared_ptr<const ModelPicture> to_cut;
    std::vector<std::unique_ptr<Forward>> views;
    std::vector<Matrix> view_runs;  // each view's tower output (RunResult::hidden), the rest dropped
    // Maps on demand (a text past kMapsKeptUpTo tokens): the forward's run, then its thumbnails
    // (LiveRun::thumbnails), a layer's heads a slice.
    std::optional<RunResult> result;
    std::vector<std::vector<Matrix>> thumbnails;
    int thumbnail_layers = 0;  // layers done, every stack's in order
    std::unique_ptr<Forward> compare;  // the same model on the session's second text (Compare), after `forward`
    RunInput compare_input;
    std::shared_ptr<kernels::Pool> pool;  // the session's when the job started
    kernels::Context ctx;                 // on that pool
    double longest_slice = 0;          // seconds: the longest step_job so far
    int frames = 0;                    // frames it has had work in
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    // Off the frame loop (ModelSession::background): a thread of its own steps the job to its next
    // stop (a translation's partial run, or the end), then clears `running`; the frame loop reads
    // the job only then. `cancel`: the text changed (the thread stops after its slice).
    std::atomic<bool> running{false}, cancel{false};
    std::atomic<float> progress{0.0f};
    std::exception_ptr error;  // what the thread's slices threw
};

namespace {

template <class F>
bool guarded(AppState& st, const std::string& name, F&& f) {
    try {
        f();
        return true;
    } catch (const ModelError& e) {
        st.error = e.what();
    } catch (const std::exception& e) {  // out of memory: the figure stays
        st.error = name + ": " + e.what();
    }
    return false;
}

// Whether a model runs on a picture: a vision model, or a vision-language one (with its text).
bool reads_pictures(const ModelConfig& c) { return c.vision() || c.vision_language(); }

}  // namespace

// [SECTION] Opening a model ------------------------------------------------------------------

int shown_tokens(const AppState& st) {
    const LiveRun* live = st.figure.live.get();
    return live && live->model == st.model.model ? static_cast<int>(live->input.ids.size()) : 0;
}

void set_model_threads(ModelSession& ms, int threads) {
    ms.threads = std::clamp(threads, 1, std::max(ms.most_threads, 1));
    if (ms.pool) ms.pool->set_threads(ms.threads);
}

namespace {
// The tokens generated after another model's prompt, or another picture's, no longer follow it
// (a generation asked for, by Generate or a link, still comes).
void forget_generated(ModelGeneration& g) {
    g.ids.clear();
    g.prompt = g.step = 0;
}
}  // namespace

void set_model_picture(AppState& st, const std::string& name, std::string_view bytes) {
    ModelSession& ms = st.model;
    guarded(st, name, [&] {
        auto picture = std::make_shared<ModelPicture>();
        picture->name = name;
        picture->image = decode_image(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), name);
        ms.picture = std::move(picture);
        forget_generated(ms.generation);
        model_input_changed(st);
        // (a model on its way, such as the window's MODEL --image FILE: it runs on the picture once in)
        const bool coming = ms.loading || ms.reading || ms.fetching || !ms.hub_request.empty() || !ms.builtin_request.empty();
        if (!coming && (!ms.model || !reads_pictures(ms.model->config())))
            throw ModelError(name, "", "a picture: a vision model (ViT, CLIP, SigLIP, DINOv2) or a vision-language one (SmolVLM) runs on it; open one (Open a model…)");
    });
}

std::string set_example_picture(AppState& st, const std::string& name) {
    const auto it = st.model.examples.find(name);
    if (it == st.model.examples.end())
        return "no example picture named " + name + (st.model.examples.empty() ? ": the model has none" : " (the model has " +
               st.model.examples.begin()->first + " … " + st.model.examples.rbegin()->first + ")");
    set_model_picture(st, name, it->second->text());
    return "";
}

void want_example_picture(AppState& st, const std::string& name) {
    ModelSession& ms = st.model;
    const bool coming = ms.reading || !ms.builtin_request.empty() || !ms.builtin_fetching.empty() || ms.fetching;
    if (coming) ms.picture_wanted = name;
    else if (std::string problem = set_example_picture(st, name); !problem.empty()) st.error = problem;
}

void open_model_files(AppState& st, ModelFiles files) {
    ModelSession& ms = st.model;
    const std::string name = files.folder;
    ms.examples.clear();
    for (const auto& [file, bytes] : files.files)
        if (file.starts_with("example-") && file.ends_with(".png")) ms.examples[file] = bytes;
    ms.slice.reset(), ms.slice_request.reset();
    ms.windows = 0;
    guarded(st, name, [&] {
        ms.loading = std::make_shared<ModelLoad>(files, /*measure_heads=*/true);
        ms.loading_name = name;
        ms.error_before_load = st.error;
    });
    if (ms.loading && !ms.picture_wanted.empty())
        if (std::string problem = set_example_picture(st, std::exchange(ms.picture_wanted, {})); !problem.empty())
            st.error = name + ": " + problem;
}

bool open_model_folder(AppState& st, const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec) && hub::parse_repo_id(path)) {
        open_hub_model(st, path);
        return true;
    }
    st.model.builtin.clear();
    st.model.hub.clear();
    return guarded(st, path, [&] {
        // a folder, or a .gguf file
        ModelFiles files = std::filesystem::is_regular_file(path, ec) ? ModelFiles::from_gguf(path) : ModelFiles::from_folder(path);
        files.keep_gguf("");  // a folder of several quantizations: the error names them
        open_model_files(st, std::move(files));
    }) && st.model.loading;
}

void open_hub_model(AppState& st, const std::string& id) {
    ModelSession& ms = st.model;
    if ((ms.hub == id && (ms.model || ms.loading || ms.reading)) || (ms.fetching && ms.fetching->id == id) || ms.hub_request == id) return;
    if (ms.fetching) ms.fetching->cancel = true;  // another id: the last fetch stops
    ms.hub_request = id;  // (`hub` names it once its files are in: the model in use keeps its name till then)
    if (ms.hub_unstored == id) ms.hub_unstored.clear();  // this time it may be kept
    st.error.clear();
}

void hub_fetch_progress(AppState& st, const std::string& file, double file_done, double file_size, double done, double total) {
    if (st.model.fetching) st.model.fetching = ModelSession::Fetching{st.model.fetching->id, file, file_done, file_size, done, total, st.model.fetching->cancel};
}

void hub_fetch_done(AppState& st, const std::string& snapshot) {
    ModelSession& ms = st.model;
    const std::string id = ms.fetching ? ms.fetching->id : snapshot;
    ms.fetching.reset();
    guarded(st, id, [&] {
        ModelFiles files = ModelFiles::from_folder(snapshot);
        files.folder = id;  // messages and the panel name the repo
        const std::optional<hub::RepoId> repo = hub::parse_repo_id(id);
        files.keep_gguf(repo ? repo->quant : "");  // a GGUF repo's snapshot may hold other quantizations fetched before
        open_model_files(st, std::move(files));
        ms.builtin.clear();
        ms.hub = id;
    });
}

void hub_fetch_failed(AppState& st, const std::string& message) {
    st.model.fetching.reset();  // (a model in use stays, with its name)
    st.error = message;
}

void open_builtin_model(AppState& st, const std::string& name) {
    ModelSession& ms = st.model;
    if (ms.builtin == name && (ms.model || ms.loading || ms.reading || !ms.builtin_request.empty() || ms.builtin_fetching == name)) return;
    ms.hub.clear();
    if (!find_builtin(name)) {
        st.error = name + ": no such built-in model";
        return;
    }
    ms.builtin = name;
    if (std::optional<ModelFiles> files = builtin_files(name)) open_model_files(st, std::move(*files));
    else ms.builtin_request = name;
}

namespace {

// Whether a model of these sizes fits in the page; if not, st.error says so.
bool fits_in_page(AppState& st, const std::string& folder, double total_bytes, double weight_bytes, const char* after) {
    if (total_bytes + weight_bytes <= kBrowserModelBytes) return true;
    st.error = folder + ": needs about " + byte_size(static_cast<double>(total_bytes + weight_bytes)) + " of memory (the weights " +
               byte_size(static_cast<double>(weight_bytes)) + ", the other files " + byte_size(static_cast<double>(total_bytes)) + "); a browser page can give a model " +
               byte_size(static_cast<double>(kBrowserModelBytes)) + after;
    return false;
}

}  // namespace

bool hub_fetch_fits(AppState& st, double total_bytes, double weight_bytes) {
    ModelSession& ms = st.model;
    if (!ms.fetching || fits_in_page(st, ms.fetching->id, total_bytes, weight_bytes, ": not downloaded")) return true;
    ms.fetching.reset();
    return false;
}

void hub_model_size(AppState& st, const std::string& id, double bytes) { st.model.hub_sizes[id] = bytes; }

void hub_fetch_unstored(AppState& st, const std::string& id) { st.model.hub_unstored = id; }

void hub_stored_models(AppState& st, std::string_view text) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    std::vector<ModelSession::StoredHubModel> stored;
    if (j.is_array())
        for (const nlohmann::json& m : j)
            if (m.is_object() && m.value("id", nlohmann::json()).is_string() && m.value("commit", nlohmann::json()).is_string() &&
                m.value("bytes", nlohmann::json()).is_number())
                stored.push_back({m["id"].get<std::string>(), m["commit"].get<std::string>(), m["bytes"].get<double>()});
    st.model.hub_stored = std::move(stored);
}

bool model_files_begin(AppState& st, const std::string& folder, double total_bytes, double weight_bytes) {
    ModelSession& ms = st.model;
    ms.reading.reset();
    ms.builtin_fetching.clear();
    if (folder != ms.builtin) ms.builtin.clear();  // a reader's own model
    if (ms.fetching && folder == ms.fetching->id) {  // the page fetched it: its files come in
        ms.hub = folder;
        ms.fetching.reset();
    } else {
        ms.hub.clear();
    }
    if (!fits_in_page(st, folder, total_bytes, weight_bytes, "")) return false;
    ms.reading = std::make_shared<ModelFilesLoad>();
    ms.reading->folder = folder;
    ms.reading->total = static_cast<long long>(total_bytes);
    return true;
}

std::uint8_t* model_file_buffer(AppState& st, const std::string& name, double size) {
    ModelSession& ms = st.model;
    if (!ms.reading || size < 0) return nullptr;
    ByteBuffer& b = ms.reading->buffers[name];
    if (!guarded(st, ms.reading->folder, [&] { b = ByteBuffer(static_cast<std::size_t>(size)); })) {
        ms.reading.reset();
        return nullptr;
    }
    return b.size() == 0 ? reinterpret_cast<std::uint8_t*>(&b) : b.data();  // a non-null address for an empty file
}

std::uint8_t* model_file_head(AppState& st, const std::string& name, double head_size, double file_size) {
    if (!st.model.reading || head_size > file_size) return nullptr;
    if (file_size > static_cast<double>(std::numeric_limits<std::size_t>::max())) {  // wasm32: offsets are 32-bit
        st.error = st.model.reading->folder + "/" + name + ": " + byte_size(static_cast<double>(file_size)) + ": a file past 4 GB cannot be read in the page";
        st.model.reading.reset();
        return nullptr;
    }
    st.model.reading->sliced[name] = static_cast<std::size_t>(file_size);
    return model_file_buffer(st, name, head_size);
}

void model_files_progress(AppState& st, double done) {
    if (st.model.reading) st.model.reading->done = static_cast<long long>(done);
}

void model_files_end(AppState& st) {
    ModelSession& ms = st.model;
    if (!ms.reading) return;
    ModelFiles files;
    files.folder = ms.reading->folder;
    for (auto& [name, bytes] : ms.reading->buffers) {
        const auto sliced = ms.reading->sliced.find(name);
        files.files[name] = sliced == ms.reading->sliced.end() ? FileBytes::own(std::move(bytes))
                                                               : FileBytes::sliced(sliced->second, std::move(bytes));
    }
    ms.reading.reset();
    open_model_files(st, std::move(files));
}

void model_files_failed(AppState& st, const std::string& message) {
    ModelSession& ms = st.model;
    const std::string folder = ms.reading ? ms.reading->folder : ms.loading ? ms.loading_name : "model";
    ms.reading.reset();
    ms.builtin_fetching.clear();
    if (ms.slice) ms.loading.reset();  // a window could not be read: the weights stop there
    ms.slice.reset(), ms.slice_request.reset();
    st.error = folder + ": " + message;
}

std::uint8_t* model_window(AppState& st, const FileRange& range) {
    ModelSession& ms = st.model;
    if (!ms.loading || ms.slice != range || ms.loading->wanted() != range) return nullptr;
    std::uint8_t* to = nullptr;
    if (!guarded(st, ms.loading_name, [&] { to = ms.loading->window(); })) {  // out of memory: nothing loads
        ms.loading.reset();
        ms.slice.reset(), ms.slice_request.reset();
    }
    return to;
}

bool model_window_filled(AppState& st) {
    ModelSession& ms = st.model;
    if (!ms.loading || !ms.slice) return false;
    ms.loading->filled();
    ms.slice.reset();
    ++ms.windows;
    return true;
}

void close_model(AppState& st) {
    ModelSession& ms = st.model;
    ms.loading.reset();
    ms.slice.reset(), ms.slice_request.reset();
    ms.job.reset();
    ms.model.reset();
    ms.builtin.clear();
    ms.builtin_fetching.clear();
    ms.hub.clear();
    ms.examples.clear();
    ms.picture_wanted.clear();
    ms.pick_head.reset();
    ms.run_revision = -1;
    close_import(st);
}

void apply_pick_head(AppState& st) {
    ModelSession& ms = st.model;
    if (ms.pick_head && ms.model && ms.model->heads) {
        const HeadScores& hs = *ms.model->heads;
        int best = 0;
        for (int i = 1; i < hs.layers * hs.heads; ++i)
            if (hs.at(*ms.pick_head, i / hs.heads, i % hs.heads) > hs.at(*ms.pick_head, best / hs.heads, best % hs.heads)) best = i;
        st.link_map = "attention:" + std::to_string(best / hs.heads + 1) + ":" + std::to_string(best % hs.heads + 1);
    }
    ms.pick_head.reset();
}

// [SECTION] Running it -----------------------------------------------------------------------

void model_input_changed(AppState& st) { ++st.model.input_revision; }

void cancel_model_run(AppState& st) {
    ModelSession& ms = st.model;
    if (!ms.job) return;
    ms.job->cancel.store(true);
    ms.job.reset();
    ms.run_revision = ms.input_revision;
}

void cancel_patching(AppState& st) {
    ModelSession& ms = st.model;
    if (!ms.patching) return;
    ms.patching.reset(), ms.patching_of.reset();
    ms.patching_stopped = true;
}

void request_generation(AppState& st) {
    st.model.generation.requested = true;
    model_input_changed(st);
}

void show_generation_step(AppState& st, int step) {
    ModelGeneration& g = st.model.generation;
    step = std::clamp(step, 0, g.generated());
    if (step == g.step) return;
    g.step = step;
    model_input_changed(st);
}

void clear_generation(AppState& st) {
    ModelGeneration& g = st.model.generation;
    if (g.ids.empty() && !g.requested) return;
    g.ids.clear();
    g.prompt = g.step = 0;
    g.requested = false;
    model_input_changed(st);
}

std::vector<HeadRef> knocked_heads(const AppState& st) {
    if (st.served.active()) return served_knocked_heads(st.served);
    if (!st.model.model) return {};
    try {
        return parse_heads(*st.model.model, st.model.experiment.knockout, "knockout");
    } catch (const ModelError&) {
        return {};
    }
}

void toggle_knockout(AppState& st, const HeadRef& head) {
    ModelSession& ms = st.model;
    if (!ms.model && !st.served.active()) return;
    std::vector<HeadRef> heads = knocked_heads(st);
    auto it = std::find(heads.begin(), heads.end(), head);
    if (it == heads.end()) heads.push_back(head);
    else heads.erase(it);
    if (st.served.active()) {  // a served model: its one stack, the server knocks them out
        std::string& text = st.served.knockout;
        text.clear();
        for (const HeadRef& h : heads) text += (text.empty() ? "" : ",") + std::to_string(h.layer + 1) + ":" + std::to_string(h.head + 1);
        served_input_changed(st);
        return;
    }
    ms.experiment.knockout = format_heads(*ms.model, heads);
    model_input_changed(st);
}

void toggle_hidden(AppState& st, int token) {
    std::vector<int>& hidden = st.model.experiment.hidden;
    auto it = std::find(hidden.begin(), hidden.end(), token);
    if (it == hidden.end()) hidden.push_back(token);
    else hidden.erase(it);
    std::sort(hidden.begin(), hidden.end());
    model_input_changed(st);
}

namespace {

using Clock = std::chrono::steady_clock;


// The session's pool, made on first use with every thread a setting may ask for.
std::shared_ptr<kernels::Pool> session_pool(ModelSession& ms) {
    if (!ms.pool) {
        ms.pool = std::make_shared<kernels::Pool>(ms.most_threads);
        ms.pool->set_threads(ms.threads);
    }
    return ms.pool;
}

// The memory a run may use: this machine's (natively), the page's (wasm32).
std::uint64_t run_memory() {
#if defined(__EMSCRIPTEN__)
    return static_cast<std::uint64_t>(kBrowserModelBytes);
#else
    return kernels::machine_memory();
#endif
}

int thumbnail_layers_total(const RunResult& r) {
    int n = 0;
    for (const StackRun& s : r.stacks) n += static_cast<int>(s.layers.size());
    return n;
}
bool thumbnails_done(const ModelJob& job) { return job.result && job.thumbnail_layers == thumbnail_layers_total(*job.result); }

// The next layer's thumbnails: each head's map pooled to at most kThumbnailBlocks² blocks (max).
void thumbnail_step(ModelJob& job) {
    if (!job.result) job.result = job.forward->take(), job.thumbnails.resize(job.result->stacks.size());
    int layer = job.thumbnail_layers;
    for (std::size_t k = 0; k < job.result->stacks.size(); ++k) {
        const StackRun& s = job.result->stacks[k];
        if (layer >= static_cast<int>(s.layers.size())) {
            layer -= static_cast<int>(s.layers.size());
            continue;
        }
        const KeptHeads& kept = s.layers[static_cast<std::size_t>(layer)].kept;
        for (int h = 0; h < kept.heads; ++h)
            job.thumbnails[k].push_back(map_pooled(job.ctx, kept, h, whole_map(kept), kThumbnailBlocks, kThumbnailBlocks).values);
        break;
    }
    ++job.thumbnail_layers;
}

// A run's input keeps every map up to kMapsKeptUpTo tokens, past that what they are computed
// from (maps on demand); refused when the run needs more memory than there is.
void set_maps_kept(RunInput& input, const LoadedModel& m) {
    input.keep_maps = std::max(input.ids.size(), input.source_ids.size()) <= static_cast<std::size_t>(kMapsKeptUpTo);
    check_run_memory(m, input, run_memory(), "text");
}

// The job for the session's input, or nullptr with st.error set (text too long, …).
std::shared_ptr<ModelJob> start_job(AppState& st) {
    ModelSession& ms = st.model;
    const LoadedModel& m = *ms.model;
    if (m.config().vision() && !ms.picture) return nullptr;  // no picture yet: nothing to run (the panel asks for one)
    auto job = std::make_shared<ModelJob>();
    job->pool = session_pool(ms);
    job->ctx.pool = job->pool.get();
    job->revision = ms.input_revision;
    const bool ok = guarded(st, m.name, [&] {
        Interventions& edits = job->input.edits;
        edits.knockout = parse_heads(m, ms.experiment.knockout, "knockout");
        edits.ablation = ms.experiment.ablation;
        const bool marian = m.config().encoder_decoder();
        // A vision-language model's picture: its tokens in the text (the views' rows the session
        // has for it, or its views to run through the tower first)
        std::optional<PictureInput> picture;
        if (m.config().vision_language() && ms.picture) {
            const std::shared_ptr<const PictureRows>& kept = ms.picture_rows;
            if (kept && kept->of == ms.picture && kept->model == ms.model) {
                job->picture_rows = kept;
                job->input.image_rows = kept->rows;
                picture.emplace();  // the tiles' count is all the prompt needs
                picture->rows = kept->tile_rows, picture->cols = kept->tile_cols;
                picture->grid_rows = kept->grid_rows, picture->grid_cols = kept->grid_cols;
            } else {  // its tiles now (the prompt), its views in the job
                picture = picture_layout(m, ms.picture->image);
                auto rows = std::make_shared<PictureRows>();
                rows->of = ms.picture, rows->model = ms.model;
                rows->tile_rows = picture->rows, rows->tile_cols = picture->cols;
                rows->grid_rows = picture->grid_rows, rows->grid_cols = picture->grid_cols;
                job->picture_rows = std::move(rows);
                job->to_cut = ms.picture;
            }
        }
        const auto with_picture = [&](const std::string& text) { return picture ? picture_prompt(m, text, *picture, "text") : text; };
        if (m.config().vision()) {  // the picture, processed as preprocessor_config.json says, in patches
            if (!m.processor)
                throw ModelError(m.folder.empty() ? "preprocessor_config.json" : m.folder + "/preprocessor_config.json", "",
                                 "missing: how the picture is resized and normalized");
            auto sized = std::make_shared<const Image>(sized_picture(*m.processor, ms.picture->image));
            RunInput in = image_input(m, pixel_values(*m.processor, *sized));
            in.edits = std::move(job->input.edits);
            job->input = std::move(in);
            job->picture = std::move(sized);
        } else if (ms.chat.on && m.chat && m.config().decoder_only()) {  // the conversation, as its template writes it
            nlohmann::ordered_json turns = nlohmann::ordered_json::array();
            for (const ChatTurn& t : ms.chat.turns) turns.push_back({{"role", t.role}, {"content", t.content}});
            TemplateOptions when;
            when.now = chat_template_now();
            ms.chat.prompt = render_chat(*m.chat, turns, m.name + ": the conversation", when);
            job->input.ids = encode_prompt(m, with_picture(ms.chat.prompt));
        } else if (!marian) {
            job->input.ids = encode_text(m, with_picture(ms.text));
        } else {
            job->input.source_ids = encode_text(m, ms.source);
            if (ms.translate && edits.ablation == Ablation::Mean && !edits.knockout.empty())
                throw ModelError("", "knockout_mode", "mean ablation needs the whole target: it is not offered while translating");
        }
        if (picture) job->input.positions = picture_positions(m, job->input.ids, *picture);  // qwen2_5_vl's three streams
        // The hidden tokens among those the run reads (set once its ids are final).
        const auto hide = [&] {
            const std::size_t n = marian ? job->input.source_ids.size() : job->input.ids.size();
            for (int j : ms.experiment.hidden)
                if (j >= 0 && static_cast<std::size_t>(j) < n) edits.hidden.push_back(j);
        };
        if (marian && ms.translate) {
            hide();
            job->encoder = std::make_unique<Forward>(m.model, RunInput{{m.config().decoder_start_id}, job->input.source_ids, edits});
            return;
        }
        if (marian) job->input.ids = encode_target(m, ms.text);
        ModelGeneration& g = ms.generation;
        if (g.requested && m.config().decoder_only()) {  // generate: the prompt into the cache
            g.requested = false;
            if (edits.ablation == Ablation::Mean && !edits.knockout.empty())
                throw ModelError("", "knockout_mode", "mean ablation needs the whole sequence: generation here runs on the KV cache");
            job->prompt = static_cast<int>(job->input.ids.size());
            job->max_new = std::min(g.tokens, m.config().position_limit() - job->prompt);
            job->sampling = g.sampling;
            job->rng = SplitMix64{g.sampling.seed};
            hide();
            if (!job->to_cut) job->decoder = std::make_unique<Decoder>(m.model, Matrix{}, edits, job->input.image_rows, job->input.positions);
            if (job->max_new <= 0) throw ModelError("", "generate", "the text already fills the model's " + std::to_string(m.config().position_limit()) + " positions");
            return;
        }
        if (!g.ids.empty() && m.config().decoder_only()) {  // a generated sequence, shown up to the scrubber's step
            g.step = std::clamp(g.step, 0, g.generated());
            job->input.ids.assign(g.ids.begin(), g.ids.begin() + g.prompt + g.step);
        }
        hide();
        set_maps_kept(job->input, m);
        job->input.record = (ms.experiment.attribution || ms.experiment.lens) && job->input.keep_maps && has_stream(m.config()) && !m.config().vision();
        if (!job->to_cut) job->forward = std::make_unique<Forward>(m.model, job->input);
        if (!marian && !reads_pictures(m.config()) && !ms.compare.empty()) {  // the second text, with the same experiment
            job->compare_input.ids = encode_text(m, ms.compare);
            job->compare_input.edits = edits;
            std::erase_if(job->compare_input.edits.hidden, [&](int j) { return j >= static_cast<int>(job->compare_input.ids.size()); });
            set_maps_kept(job->compare_input, m);
            job->compare = std::make_unique<Forward>(m.model, job->compare_input);
        }
    });
    return ok ? job : nullptr;
}

// One slice of a job: a forward's sub-block, or one generated token. Translating, each token
// but the last is followed by a preview (a forward over the target so far), so the page shows
// each output token's attention as it appears.
void step_job(ModelJob& job, const LoadedModel& m) {
    const ModelConfig& c = m.config();
    if (job.to_cut && job.views.empty()) {  // a picture's views cut as its processor cuts them, each a run of the tower
        PictureInput picture = picture_input(m, job.to_cut->image);
        for (RunInput& view : picture.views) {
            view.keep_maps = false;  // the tower's rows are what the text reads
            job.views.push_back(std::make_unique<Forward>(*m.vision, std::move(view)));
        }
        auto rows = std::make_shared<PictureRows>(*job.picture_rows);
        const PictureViews& views = picture.pictures;
        rows->global = views.rows > 0 ? std::make_shared<const Image>(views.views.back()) : nullptr;
        rows->tiles = std::make_shared<const Image>(views.rows > 0 ? joined_tiles(views) : views.views.front());
        job.picture_rows = std::move(rows);
    } else if (job.view_runs.size() < job.views.size()) {  // a picture's view through the tower; after the last, the text's run
        Forward& view = *job.views[job.view_runs.size()];
        view.step(job.ctx);
        if (!view.done()) return;
        job.view_runs.push_back(view.take().hidden);
        if (job.view_runs.size() < job.views.size()) return;
        auto rows = std::make_shared<PictureRows>(*job.picture_rows);
        rows->rows = job.input.image_rows = picture_rows(job.ctx, m, job.view_runs, rows->grid_rows);
        job.picture_rows = std::move(rows);
        job.view_runs.clear(), job.views.clear(), job.to_cut.reset();
        if (job.sampling) job.decoder = std::make_unique<Decoder>(m.model, Matrix{}, job.input.edits, job.input.image_rows, job.input.positions);
        else job.forward = std::make_unique<Forward>(m.model, job.input);
    } else if (job.preview) {
        job.preview->step(job.ctx);
        if (!job.preview->done()) return;
        job.partial = job.preview->take();
        job.partial_input = job.input;
        job.preview.reset();
    } else if (job.encoder) {
        job.encoder->step(job.ctx);
        if (!job.encoder->done()) return;
        job.decoder = std::make_unique<Decoder>(m.model, job.encoder->take().encoder_output, job.input.edits);
        job.encoder.reset();
        job.input.ids = {c.decoder_start_id};
        job.logits = job.decoder->step(job.ctx, c.decoder_start_id);
    } else if (job.decoder && job.fed < job.prompt) {  // generating: the prompt into the cache, a token a slice (a picture's both-ways run at once)
        const int n = fed_together(c, job.input.ids, job.fed);
        const auto first = job.input.ids.begin() + job.fed;
        job.logits = job.decoder->step(job.ctx, std::vector<int>(first, first + n));
        job.fed += n;
    } else if (job.decoder) {
        const int next = job.sampling ? pick_token(job.logits, *job.sampling, job.rng)
                                      : static_cast<int>(std::max_element(job.logits.begin(), job.logits.end()) - job.logits.begin());
        job.input.ids.push_back(next);
        const int generated = static_cast<int>(job.input.ids.size()) - (job.sampling ? job.prompt : 1);
        if (next == c.eos_id || generated >= job.max_new || static_cast<int>(job.input.ids.size()) >= c.position_limit()) {
            job.decoder.reset();
            set_maps_kept(job.input, m);
            job.forward = std::make_unique<Forward>(m.model, job.input);
        } else {
            job.logits = job.decoder->step(job.ctx, next);
            job.preview = std::make_unique<Forward>(m.model, job.input);
        }
    } else if (job.forward && !job.forward->done()) {
        job.forward->step(job.ctx);
    } else if (job.forward && !job.input.keep_maps && !thumbnails_done(job)) {
        thumbnail_step(job);
    } else if (job.compare) {
        job.compare->step(job.ctx);
    }
}

// Every forward of the job is done (and a long text's thumbnails): the figure can be shown.
bool finished(const ModelJob& job) {
    return job.forward && job.forward->done() && (job.input.keep_maps || thumbnails_done(job)) && (!job.compare || job.compare->done());
}

std::shared_ptr<const LiveRun> live_run(const ModelSession& ms, RunInput input, RunResult result,
                                        std::vector<std::vector<Matrix>> thumbnails = {}, std::shared_ptr<const Image> picture = nullptr,
                                        const PictureRows* tiles = nullptr) {
    auto live = std::make_shared<LiveRun>();
    live->model = ms.model;
    live->input = std::move(input);
    live->result = std::move(result);
    live->thumbnails = std::move(thumbnails);
    live->picture = std::move(picture);
    if (tiles) {  // a vision-language model's picture
        live->picture = tiles->tiles, live->global_picture = tiles->global;
        live->tile_rows = tiles->tile_rows, live->tile_cols = tiles->tile_cols;
    }
    live->top = top_tokens(*ms.model, live->result.logits, ms.top_n);
    return live;
}

// A run becomes the figure (a run of the model already shown keeps the choice of map), with
// the second text's run when there is one.
void show_run(AppState& st, RunInput input, RunResult result, std::shared_ptr<const LiveRun> compare = nullptr,
              std::vector<std::vector<Matrix>> thumbnails = {}, std::shared_ptr<const Image> picture = nullptr,
              const PictureRows* tiles = nullptr) {
    ModelSession& ms = st.model;
    const bool same_model = st.figure.live && st.figure.live->model == ms.model;
    guarded(st, ms.model->name, [&] {
        show_layered_figure(st, live_figure(live_run(ms, std::move(input), std::move(result), std::move(thumbnails), std::move(picture), tiles)),
                            same_model);
        st.figure.compare = std::move(compare);
    });
}

// One of the works after a run (`run`: steps, done(), take()), in slices of the budget left; once
// done, its result is the figure's (`out`, when the figure still shows the run it read: `of`) and
// it is dropped. A slice starts only when one as long as the longest so far still fits. True
// when done (or it failed: st.error says why).
template <class Run, class Result>
bool finish_in_slices(AppState& st, kernels::Context& ctx, std::shared_ptr<Run>& run, std::shared_ptr<const LiveRun>& of,
                      std::shared_ptr<const Result>& out, Clock::time_point start, double budget_seconds) {
    if (!run) return true;
    const bool ok = guarded(st, st.model.model->name, [&] {
        double longest = 0;
        do {
            const Clock::time_point slice = Clock::now();
            run->step(ctx);
            longest = std::max(longest, std::chrono::duration<double>(Clock::now() - slice).count());
        } while (!run->done() && std::chrono::duration<double>(Clock::now() - start).count() + longest <= budget_seconds);
    });
    if (ok && !run->done()) return false;
    if (ok && st.figure.live == of) out = std::make_shared<const Result>(run->take());
    run.reset();
    of.reset();
    return true;
}

// The works after a run, one after another in slices of each frame's budget left: the tokens'
// probabilities (beside the text: a band of rows a slice), the lens (a band of one layer's rows),
// patching (a sub-block of one of its runs), the heads' importance.
void after_run_work(AppState& st, Clock::time_point start, double budget_seconds) {
    ModelSession& ms = st.model;
    kernels::Context ctx(kernels::best_isa(), session_pool(ms).get());
    const double live = std::min(budget_seconds, kLiveWorkSeconds);
    if (finish_in_slices(st, ctx, ms.probs, ms.probs_of, st.figure.probs, start, live) &&
        finish_in_slices(st, ctx, ms.lens, ms.lens_of, st.figure.lens, start, live) &&
        finish_in_slices(st, ctx, ms.patching, ms.patching_of, st.figure.patching, start, budget_seconds))
        finish_in_slices(st, ctx, ms.importance, ms.importance_of, st.figure.importance, start, budget_seconds);
}

// The reader's target and contrast as ids (−1 where not given); false, with st.error naming the
// field, for text that is no single token or a contrast that is the target.
bool why_tokens(AppState& st, int& target, int& contrast) {
    const ModelExperiment& ex = st.model.experiment;
    const LoadedModel& m = *st.model.model;
    target = contrast = -1;
    return guarded(st, m.name, [&] {
        if (!ex.target.empty()) target = one_token(m, ex.target, "target");
        if (!ex.contrast.empty()) contrast = one_token(m, ex.contrast, "contrast");
        if (target >= 0 && contrast == target) throw ModelError(m.folder, "contrast", "\"" + ex.contrast + "\" is the target's token: give another");
    });
}

// Patching's corrupted run: the corrupted text's ids with the text's interventions, else the
// Compare text's run; nothing when there is neither, or the Compare text's length differs (the
// panel says so). A corrupted text of another length is an error naming the field.
std::optional<RunInput> corrupted_input(AppState& st, const LiveRun& live, const LiveRun* compare) {
    const ModelExperiment& ex = st.model.experiment;
    const LoadedModel& m = *st.model.model;
    if (ex.corrupted.empty()) {
        if (!compare || compare->input.ids.size() != live.input.ids.size()) return std::nullopt;
        return compare->input;
    }
    RunInput in = live.input;
    const bool ok = guarded(st, m.name, [&] {
        in.ids = encode_text(m, ex.corrupted);
        if (in.ids.size() != live.input.ids.size())
            throw ModelError(m.folder, "corrupted", "the corrupted text is " + std::to_string(in.ids.size()) + " tokens and the text " +
                                                        std::to_string(live.input.ids.size()) + ": patching needs as many");
    });
    if (!ok) return std::nullopt;
    std::erase_if(in.edits.hidden, [&](int j) { return j >= static_cast<int>(in.ids.size()); });
    return in;
}

float job_progress(const ModelJob& job) {
    if (job.to_cut && job.views.empty()) return 0.0f;  // the picture being cut
    if (!job.views.empty()) {  // a picture's views through the tower: the first half
        const std::size_t done = job.view_runs.size();
        const float part = done < job.views.size() ? job.views[done]->progress() : 1.0f;
        return 0.5f * (static_cast<float>(done) + part) / static_cast<float>(job.views.size());
    }
    if (job.encoder) return 0.1f * job.encoder->progress();
    if (job.decoder)
        return 0.1f + 0.6f * static_cast<float>(job.input.ids.size() - static_cast<std::size_t>(job.prompt)) / static_cast<float>(job.max_new + 1);
    if (!job.forward) return 0.0f;
    if (job.input.keep_maps) return job.forward->progress();
    // a long text: the forward, then its thumbnails
    const float thumbs = job.result ? static_cast<float>(job.thumbnail_layers) / static_cast<float>(std::max(thumbnail_layers_total(*job.result), 1)) : 0.0f;
    return 0.8f * job.forward->progress() + 0.2f * thumbs;
}

// Background: a thread steps the job to its next stop (the frame loop shows what it stopped for,
// then starts it again). The thread holds the job, the model and (through the job) the pool.
void run_in_background(const std::shared_ptr<ModelJob>& job, const std::shared_ptr<const LoadedModel>& model) {
    job->running.store(true);
    std::thread([job, model] {
        try {
            do {
                step_job(*job, *model);
                job->progress.store(job_progress(*job), std::memory_order_relaxed);
            } while (!job->cancel.load(std::memory_order_relaxed) && !finished(*job) && !job->partial);
        } catch (...) {
            job->error = std::current_exception();
        }
        job->running.store(false, std::memory_order_release);
    }).detach();
}

}  // namespace

bool advance_loading(AppState& st, double budget_seconds) {
    ModelSession& ms = st.model;
    if (!ms.loading) return true;
    const Clock::time_point start = Clock::now();
    auto time_left = [&] { return std::chrono::duration<double>(Clock::now() - start).count() < budget_seconds; };
    const bool ok = guarded(st, ms.loading_name, [&] {
        do ms.loading->step();  // the loader's steps are about 16 MB each: a few ms
        while (!ms.loading->done() && !ms.loading->wanted() && time_left());
        if (const std::optional<FileRange>& w = ms.loading->wanted(); w && !ms.slice) ms.slice = ms.slice_request = *w;
        if (!ms.loading->done()) return;
        ms.model = std::make_shared<const LoadedModel>(ms.loading->take());
        ms.loading.reset();
        // what went wrong before this model is past (a vision model's first figure waits for its
        // picture); what went wrong while it loaded (a picture that is none) is not
        if (st.error == ms.error_before_load) st.error.clear();
        if (ms.job) {  // a run the model before this one started while this one loaded: not this model's
            ms.job->cancel.store(true);
            ms.job.reset();
        }
        ms.run_revision = -1;
        forget_generated(ms.generation);
        // A first model reads the sentence the scene had (unless a link gave its text).
        if (ms.text.empty()) ms.text = st.target_text;
        if (ms.source.empty()) ms.source = st.source_text.empty() ? st.target_text : st.source_text;
        apply_pick_head(st);
    });
    if (!ok) {
        ms.loading.reset();
        ms.slice.reset(), ms.slice_request.reset();
    }
    return !ms.loading && ok;
}

void advance_model(AppState& st, double budget_seconds) {
    ModelSession& ms = st.model;
    const Clock::time_point start = Clock::now();
    if (!advance_loading(st, budget_seconds)) return;  // loaded in this frame: its first run starts in it too
    if (!ms.model) return;
    if (!ms.builtin.empty() && ms.model->name != ms.builtin) return;  // another built-in model on its way (the page fetches it)
    if (ms.job && ms.job->revision != ms.input_revision) {  // typed on: the newest text wins
        ms.job->cancel.store(true);  // a thread running it stops after its slice
        ms.job.reset();
    }
    if (!ms.job && ms.run_revision != ms.input_revision) {
        ms.run_revision = ms.input_revision;
        ms.importance.reset();
        ms.lens.reset(), ms.lens_of.reset();
        ms.probs.reset(), ms.probs_of.reset();
        ms.patching.reset(), ms.patching_of.reset();
        ms.patching_stopped = false;
        ms.job = start_job(st);
    }
    if (!ms.job) {
        after_run_work(st, start, budget_seconds);
        return;
    }
    ModelJob& job = *ms.job;
    ++job.frames;
    bool ok = true;
    if (ms.background) {
        // On its own thread: the frame only looks at it once it has stopped.
        if (job.running.load(std::memory_order_acquire)) {
            ms.job_progress = job.progress.load(std::memory_order_relaxed);
            return;
        }
        if (job.error) ok = guarded(st, ms.model->name, [&] { std::rethrow_exception(job.error); });
        else if (!finished(job) && !job.partial) return run_in_background(ms.job, ms.model);
    } else {
        // Slices while the next one still fits in the budget, judged by the longest so far (a
        // layer's feed-forward block, in GPT-2 small): at least one a frame.
        ok = guarded(st, ms.model->name, [&] {
            do {
                const Clock::time_point slice = Clock::now();
                step_job(job, *ms.model);
                job.longest_slice = std::max(job.longest_slice, std::chrono::duration<double>(Clock::now() - slice).count());
            } while (!finished(job) && !job.partial &&
                     std::chrono::duration<double>(Clock::now() - start).count() + job.longest_slice <= budget_seconds);
        });
    }
    if (!ok) {
        ms.job.reset();
        return;
    }
    ms.job_progress = job_progress(*ms.job);
    if (job.partial) {  // the translation so far
        show_run(st, std::move(*job.partial_input), std::move(*job.partial), nullptr, {}, nullptr, job.picture_rows.get());
        ++ms.partials;
        job.partial.reset();
        job.partial_input.reset();
    } else if (finished(job)) {
        if (job.sampling) {  // generated: the sequence, shown whole; the scrubber goes back through it
            ModelGeneration& g = ms.generation;
            g.ids = job.input.ids;
            g.prompt = job.prompt;
            g.step = std::clamp(g.link_step.value_or(g.generated()), 0, g.generated());
            g.link_step.reset();
            if (g.step < g.generated()) {  // a link's earlier step: shown by the next run
                model_input_changed(st);
                ms.job.reset();
                return;
            }
        }
        const bool generation_step = !ms.generation.ids.empty();
        std::shared_ptr<const LiveRun> compare = job.compare ? live_run(ms, std::move(job.compare_input), job.compare->take()) : nullptr;
        RunResult result = job.result ? std::move(*job.result) : job.forward->take();
        if (job.picture_rows) ms.picture_rows = job.picture_rows;  // the next text runs on the same rows
        show_run(st, std::move(job.input), std::move(result), std::move(compare), std::move(job.thumbnails), std::move(job.picture),
                 job.picture_rows.get());
        if (generation_step && st.figure.live)  // the newest token's row: the query this step computed
            st.pinned = {TokenRef::Query, static_cast<int>(st.figure.live->input.ids.size()) - 1};
        ms.last_run_frames = job.frames;
        ms.last_run_ms = std::chrono::duration<double, std::milli>(Clock::now() - job.started).count();
        ms.job.reset();
        const LiveRun* live = st.figure.live.get();
        const LiveRun* other = st.figure.compare.get();
        int target = -1, contrast = -1;
        const bool tokens = !(live && (ms.experiment.attribution || ms.experiment.patching) && has_stream(ms.model->config())) ||
                            why_tokens(st, target, contrast);
        if (tokens && live && !live->top.empty() && target < 0) target = live->top.front().id;  // the prediction
        if (tokens && live && live->input.record && !live->top.empty() && ms.experiment.attribution) {  // a few products of d: within the frame
            kernels::Context one;
            st.figure.attribution = std::make_shared<const Attribution>(attribute(one, ms.model->model, live->result, target, contrast));
        }
        if (live && ms.experiment.probs != TokenShade::Off && ms.model->config().decoder_only() &&
            live->result.hidden.rows() == static_cast<Eigen::Index>(live->input.ids.size())) {  // the LM head over the text's rows: in slices
            ms.probs = std::make_shared<TokenProbsRun>(ms.model->model, live->result, live->input.ids, 10, 1 << 16);
            ms.probs_of = st.figure.live;
        }
        if (live && live->input.record && ms.experiment.lens) {  // the LM head over every layer's rows: in slices
            ms.lens = std::make_shared<LensRun>(ms.model->model, live->result, 5, 1 << 16);
            ms.lens_of = st.figure.live;
        }
        if (tokens && ms.experiment.patching && live && has_stream(ms.model->config()) && live->top.size() > 1)
            if (std::optional<RunInput> corrupted = corrupted_input(st, *live, other)) {  // the contrast, unless given: PatchingRun's choice
                ms.patching = std::make_shared<PatchingRun>(ms.model->model, live->input, std::move(*corrupted), target, contrast, "patching");
                ms.patching_of = st.figure.live;
            }
        if (ms.experiment.importance && live && !live->result.logits.empty()) {
            ms.importance = std::make_shared<HeadImportanceRun>(ms.model->model, live->input, live->result.logits);
            ms.importance_of = st.figure.live;
        }
    }
}

// [SECTION] State for the tests --------------------------------------------------------------

void add_model_json(const AppState& st, nlohmann::json& out) {
    using nlohmann::json;
    const ModelSession& ms = st.model;
    json j = {{"active", ms.active()}, {"busy", ms.busy()}, {"text", ms.text}, {"source", ms.source}, {"translate", ms.translate},
              {"input_revision", ms.input_revision}, {"run_revision", ms.run_revision}, {"last_run_frames", ms.last_run_frames},
              {"last_run_ms", ms.last_run_ms}, {"background", ms.background}};
    j["reading"] = ms.reading ? json{{"done", ms.reading->done}, {"total", ms.reading->total}} : json(nullptr);
    j["loading"] = ms.loading ? json(ms.loading->progress()) : json(nullptr);
    j["windows"] = ms.windows;
    j["partials"] = ms.partials;
    json turns = json::array();
    for (const ChatTurn& t : ms.chat.turns) turns.push_back({{"role", t.role}, {"content", t.content}});
    j["chat"] = {{"on", ms.chat.on}, {"turns", turns}, {"prompt", ms.chat.prompt},
                 {"template", ms.model && ms.model->chat ? json(ms.model->chat->file) : json(nullptr)}};
    j["picture"] = ms.picture ? json{{"name", ms.picture->name}, {"width", ms.picture->image.width}, {"height", ms.picture->image.height}}
                              : json(nullptr);
    j["running"] = ms.job ? json(ms.job_progress) : json(nullptr);
    if (ms.model) j.update({{"name", ms.model->name}, {"model_type", ms.model->config().model_type}, {"summary", ms.model->summary(shown_tokens(st))}});
    j["builtin"] = ms.builtin;
    j["hub"] = ms.hub;
    j["hub_unstored"] = !ms.hub.empty() && ms.hub_unstored == ms.hub;
    j["hub_sizes"] = ms.hub_sizes;
    j["hub_stored"] = json::array();
    for (const ModelSession::StoredHubModel& m : ms.hub_stored) j["hub_stored"].push_back({{"id", m.id}, {"commit", m.commit}, {"bytes", m.bytes}});
    j["fetching"] = ms.fetching ? json{{"id", ms.fetching->id}, {"file", ms.fetching->file}, {"done", ms.fetching->done}, {"total", ms.fetching->total}}
                                : json(nullptr);
    const ModelExperiment& ex = ms.experiment;
    j["experiment"] = {{"knockout", ex.knockout}, {"knockout_mode", ex.ablation == Ablation::Mean ? "mean" : "zero"},
                       {"hidden", ex.hidden}, {"importance", ex.importance}, {"attribution", ex.attribution}, {"lens", ex.lens}, {"patching", ex.patching},
                       {"target", ex.target}, {"contrast", ex.contrast}, {"corrupted", ex.corrupted},
                       {"probs", ex.probs == TokenShade::Off ? "0" : ex.probs == TokenShade::Probability ? "p" : "surprisal"}};
    const ModelGeneration& g = ms.generation;
    j["generation"] = {{"ids", g.ids}, {"prompt", g.prompt}, {"step", g.step}, {"tokens", g.tokens}, {"requested", g.requested},
                       {"temperature", g.sampling.temperature}, {"top_k", g.sampling.top_k}, {"seed", g.sampling.seed}};
    if (const HeadImportance* hi = st.figure.importance.get()) {
        json delta = json::array();
        for (float v : hi->delta) delta.push_back(std::isfinite(v) ? json(v) : json(nullptr));
        j["importance"] = {{"token", hi->token}, {"layers", hi->layers}, {"heads", hi->heads}, {"delta", delta}};
    }
    if (const Lens* lens = st.figure.lens.get()) {  // [layer][position]: the top token, its p, the target's rank
        json rows = json::array();
        for (int l = 0; l < lens->layers; ++l) {
            json row = json::array();
            for (int t = 0; t < lens->positions; ++t) {
                const LensCell& c = lens->at(l, t);
                row.push_back({c.top.front().id, c.top.front().p, c.target, c.target_rank});
            }
            rows.push_back(row);
        }
        j["lens"] = rows;
    }
    if (const TokenProbs* probs = st.figure.probs.get()) {  // [T]: null, then [id, p, rank, [[id, p] × 10]]
        json at = json::array({nullptr});
        for (int t = 1; t < probs->positions(); ++t) {
            const LensCell& c = probs->at[static_cast<std::size_t>(t)];
            json top = json::array();
            for (const TokenP& k : c.top) top.push_back({k.id, k.p});
            at.push_back({c.target, c.target_p, c.target_rank, top});
        }
        j["probs"] = at;
    }
    if (const Patching* p = st.figure.patching.get())
        j["patching"] = {{"heads", p->head}, {"resid", p->resid}, {"clean", p->clean}, {"corrupted", p->corrupted},
                         {"layers", p->layers}, {"positions", p->positions}};
    if (const Attribution* a = st.figure.attribution.get())
        j["attribution"] = {{"target", a->target}, {"contrast", a->contrast}, {"total", a->total}, {"embed", a->embed}, {"bias", a->bias}, {"heads", a->head}, {"mlps", a->mlp}};
    if (ms.model && ms.model->heads) {  // the head scores, [kind][layer][head]
        const HeadScores& hs = *ms.model->heads;
        for (int k = 0; k < kHeadKinds; ++k) {
            json layers = json::array();
            for (int l = 0; l < hs.layers; ++l) {
                json heads = json::array();
                for (int h = 0; h < hs.heads; ++h) heads.push_back(hs.at(static_cast<HeadKind>(k), l, h));
                layers.push_back(heads);
            }
            j["heads"][kHeadKindNames[static_cast<size_t>(k)]] = layers;
        }
    }
    j["compare"] = ms.compare;
    if (const LiveRun* c = st.figure.compare.get()) j["compare_ids"] = c->input.ids;
    if (const LiveRun* live = st.figure.live.get()) {
        json top = json::array();
        for (const NextToken& t : live->top) top.push_back({{"id", t.id}, {"token", t.token}, {"p", t.p}});
        j["figure"] = {{"ids", live->input.ids}, {"source_ids", live->input.source_ids}, {"top", top}};
        // The Steps view's head's Q as the scores read it (a rotary family's: after the
        // rotation) and, for a rotary family, before it, as the tests compare them with the
        // reference (small runs only).
        const Trace& tr = st.figure.trace();
        if (st.figure.has(Detail::Projections) && st.steps.head < tr.heads && tr.T_q() * tr.d_k <= 4096) {
            auto rows_of = [](const Matrix& m) {
                json rows = json::array();
                for (Eigen::Index r = 0; r < m.rows(); ++r) {
                    json row = json::array();
                    for (Eigen::Index c = 0; c < m.cols(); ++c) row.push_back(m(r, c));
                    rows.push_back(row);
                }
                return rows;
            };
            const size_t head = static_cast<size_t>(st.steps.head);
            j["figure"]["q"] = rows_of(tr.attention.heads[head].q);
            if (tr.family.rotary()) j["figure"]["q_unrotated"] = rows_of(tr.family.q_unrotated[head]);
        }
    }
    out["model"] = j;
}

}  // namespace attn
