// served_state.cpp: see served_state.hpp.
#include "served_state.hpp"

#include "app_state.hpp"
#include "attention_file.hpp"
#include "import_state.hpp"
#include "model.hpp"
#include "safetensors.hpp"
#include "strings.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <utility>

namespace attn {

namespace {

constexpr double kServedRetrySeconds = 3.0;
constexpr int kServedReruns = 3;
// A long text's layers of Q and K the page keeps (the shown one among them): at most 3, and past
// the first, only while they hold at most 512 MB (a big model's layer at 8 192 tokens is 200 MB).
constexpr int kServedLayersKept = 3;
constexpr std::size_t kServedLayerBytes = std::size_t{512} << 20;

void send(ServedSession& s, ServedAsk what, std::string path, std::string body = {}) {
    s.waiting = s.next_id++;
    s.asked = what;
    s.outbox.push_back({s.waiting, std::move(path), std::move(body)});
}

// The body of a run or a generation: the text and the heads knocked out.
nlohmann::json input_body(const ServedSession& s) {
    nlohmann::json body = {{"text", s.text}};
    for (const HeadRef& h : served_knocked_heads(s)) body["knockout"].push_back({h.layer, h.head});
    return body;
}

void send_run(ServedSession& s) {
    s.reading.reset();  // a layer of the last run's
    s.ran = s.text, s.ran_knockout = s.knockout;
    s.text_edited = false;
    send(s, ServedAsk::Run, "api/run", input_body(s).dump());
}

void send_thumbnails(ServedSession& s);

// What went wrong, as one line: the server's {"error": …}, else the status.
std::string served_problem(int status, const std::string& body) {
    if (status == 0) return body.empty() ? "no answer" : body;
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_string()) return j["error"].get<std::string>();
    return "HTTP " + std::to_string(status);
}

// The server's /api/info: its model's name and limits; then the text runs.
void took_info(ServedSession& s, const nlohmann::json& j) {
    s.model = j.value("model", std::string("model"));
    s.maps_up_to = j.value("maps_up_to", 512);
    if (s.model.empty()) s.model = "model";
    send_run(s);
}

// A run's tokens and next tokens; then its maps, when the server sends them whole.
void took_run(ServedSession& s, const nlohmann::json& j) {
    s.run = j.value("run", 0);
    s.tokens = static_cast<int>(j.value("tokens", nlohmann::json::array()).size());
    s.causal = j.value("causal", true);
    s.top.clear();
    s.remote.reset();  // the layers' Q and K are the run's
    s.asked_layer = s.refused_layer = -1;
    for (const nlohmann::json& t : j.value("top", nlohmann::json::array()))
        s.top.push_back({t.value("id", 0), t.value("token", std::string()), t.value("p", 0.0f)});
    s.run_tokens.clear();
    for (const nlohmann::json& t : j.value("tokens", nlohmann::json::array())) s.run_tokens.push_back(t.is_string() ? t.get<std::string>() : "");
    s.layers = j.value("layers", 0), s.heads = j.value("heads", 0), s.kv_heads = j.value("kv_heads", 0);
    s.d_model = j.value("d_model", 0);
    s.windows = j.value("windows", std::vector<int>{});
    if (s.tokens > s.maps_up_to) {  // a long text: the maps as questions
        if (s.layers < 1 || s.heads < 1) {
            s.error = "api/run: no layers or heads";
            return;
        }
        s.thumbnails.clear();
        send_thumbnails(s);
        return;
    }
    send(s, ServedAsk::Maps, "api/maps?run=" + std::to_string(s.run));
}

// The next layer's thumbnails: every head's whole map pooled by the server.
void send_thumbnails(ServedSession& s) {
    const int layer = static_cast<int>(s.thumbnails.size()) / s.heads;
    send(s, ServedAsk::Thumbnails,
         "api/region?run=" + std::to_string(s.run) + "&layer=" + std::to_string(layer) + "&rows=" + std::to_string(kThumbnailBlocks) +
             "&cols=" + std::to_string(kThumbnailBlocks));
}

void send_layer(ServedSession& s, int layer) {
    s.asked_layer = layer;
    send(s, ServedAsk::Layer, "api/qk?run=" + std::to_string(s.run) + "&layer=" + std::to_string(layer));
}

// A tensor of an answer (a .safetensors file) of floats; its shape must be `shape` (−1: any).
const TensorInfo& answer_info(const SafetensorsHeader& h, const std::string& name, std::vector<std::int64_t>& shape) {
    auto it = h.tensors.find(name);
    if (it == h.tensors.end()) throw ModelError("answer", name, "missing");
    const TensorInfo& t = it->second;
    bool fits = t.shape.size() == shape.size() && is_float_weight(t.dtype);
    for (size_t i = 0; fits && i < shape.size(); ++i) fits = shape[i] < 0 || shape[i] == t.shape[i];
    if (!fits) throw ModelError("answer", name, "expected " + shape_text(shape) + " floats, not " + shape_text(t.shape) + " " + dtype_name(t.dtype));
    shape = t.shape;
    return t;
}

// Its values, as floats.
std::vector<float> answer_tensor(const FileBytes& f, const SafetensorsHeader& h, const std::string& name,
                                 std::vector<std::int64_t>& shape) {
    const TensorInfo& t = answer_info(h, name, shape);
    std::vector<float> out(static_cast<size_t>(t.elements()));
    convert_to_f32(f.data(), t, out.data());
    return out;
}

// Rows r0 … r1 − 1 of a [heads, T, D] tensor of floats into `out` as a block keeps it, T × (heads·D)
// with head h in columns h·D: a row of D at a time, into the block itself (no copy of the whole
// answer, 25 MB at 8 192 tokens, whose pages are new memory each time).
void answer_rows(const FileBytes& f, const TensorInfo& t, Matrix& out, std::int64_t r0, std::int64_t r1) {
    const std::int64_t heads = t.shape[0], T = t.shape[1], D = t.shape[2];
    TensorInfo row = t;
    row.shape = {D};
    const std::size_t row_bytes = (t.end - t.begin) / static_cast<std::size_t>(std::max<std::int64_t>(heads * T, 1));
    for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t i = r0; i < r1; ++i) {
            row.begin = t.begin + static_cast<std::size_t>(h * T + i) * row_bytes, row.end = row.begin + row_bytes;
            convert_to_f32(f.data(), row, out.row(i).data() + h * D);
        }
}

std::string metadata(const SafetensorsHeader& h, const char* key) {
    auto it = h.metadata.find(key);
    return it == h.metadata.end() ? std::string() : it->second;
}

// /api/region of a layer's every head: heads × R × C blocks (R = C = min(T, 64), as the model
// view reads them), appended to the thumbnails.
void took_thumbnails(ServedSession& s, const std::string& body) {
    const auto f = FileBytes::borrow(reinterpret_cast<const std::uint8_t*>(body.data()), body.size());
    const SafetensorsHeader h = read_safetensors_header(*f, "api/region");
    const std::int64_t blocks = std::min<std::int64_t>(static_cast<std::int64_t>(s.run_tokens.size()), kThumbnailBlocks);
    std::vector<std::int64_t> shape = {s.heads, blocks, blocks};
    const std::vector<float> values = answer_tensor(*f, h, "values", shape);
    const auto R = static_cast<Eigen::Index>(shape[1]), C = static_cast<Eigen::Index>(shape[2]);
    for (int head = 0; head < s.heads; ++head)
        s.thumbnails.push_back(Eigen::Map<const Matrix>(values.data() + static_cast<size_t>(head) * R * C, R, C));
}

}  // namespace

// /api/qk of a layer's every head, checked, its block made and its rows still to read: q [H, T, D]
// and k [KV, T, D] (into the block's Q and K), what a score is, and value_norms [H, T] where the
// server sends them.
struct ServedLayerReading {
    std::string body;                  // the answer (a .safetensors file)
    TensorInfo q, k;                   // its tensors
    std::shared_ptr<KeptHeads> kept;   // what they are read into
    std::shared_ptr<const FileBytes> file;  // borrows `body`
    std::int64_t row = 0;              // rows of Q and K read, of every head
};

namespace {

std::shared_ptr<ServedLayerReading> took_layer(const ServedSession& s, std::string answer) {
    auto reading = std::make_shared<ServedLayerReading>();
    reading->body = std::move(answer);
    reading->file = FileBytes::borrow(reinterpret_cast<const std::uint8_t*>(reading->body.data()), reading->body.size());
    const FileBytes& f = *reading->file;
    const SafetensorsHeader h = read_safetensors_header(f, "api/qk");
    const auto T = static_cast<std::int64_t>(s.run_tokens.size());
    std::vector<std::int64_t> q_shape = {s.heads, T, -1};
    const TensorInfo& q = answer_info(h, "q", q_shape);
    std::vector<std::int64_t> k_shape = {-1, T, q_shape[2]};
    const TensorInfo& k = answer_info(h, "k", k_shape);
    auto kept = std::make_shared<KeptHeads>();
    if (q_shape[2] < 1 || q_shape[2] > 4096) throw ModelError("api/qk", "q", "a head of " + std::to_string(q_shape[2]) + " numbers");
    kept->heads = s.heads, kept->kv_heads = static_cast<int>(k_shape[0]), kept->d_head = static_cast<int>(q_shape[2]);
    if (kept->kv_heads < 1 || s.heads % kept->kv_heads != 0)
        throw ModelError("api/qk", "k", std::to_string(kept->kv_heads) + " K heads for " + std::to_string(s.heads) + " query heads");
    kept->T_q = kept->T_k = static_cast<int>(T);
    kept->q.resize(T, s.heads * q_shape[2]);  // its pages are touched as its rows are read
    kept->k.resize(T, k_shape[0] * k_shape[2]);
    if (h.tensors.count("value_norms")) {  // where the server knows W_o: Explain's value-weighted reading
        std::vector<std::int64_t> n_shape = {s.heads, T};
        kept->value_norms = Eigen::Map<const Matrix>(answer_tensor(f, h, "value_norms", n_shape).data(), s.heads, T);
    }
    const nlohmann::json sinks = nlohmann::json::parse(metadata(h, "sinks"), nullptr, false);
    kept->factor = std::strtof(metadata(h, "scaling").c_str(), nullptr);
    kept->softcap = std::strtof(metadata(h, "softcap").c_str(), nullptr);
    kept->causal = metadata(h, "causal") == "1";
    kept->window = std::atoi(metadata(h, "window").c_str());
    if (sinks.is_array() && !sinks.empty()) kept->sinks = sinks.get<std::vector<float>>();
    if (!(kept->factor > 0) || kept->softcap < 0 || kept->window < 0 || (!kept->sinks.empty() && static_cast<int>(kept->sinks.size()) != s.heads))
        throw ModelError("api/qk", "metadata", "scaling, softcap, window or sinks out of range");
    reading->q = q, reading->k = k, reading->kept = std::move(kept);
    return reading;
}

// A frame's rows of the layer's Q and K (`bytes` of floats, at least a row); true once all are in.
bool read_layer_rows(ServedLayerReading& r, std::size_t bytes) {
    const KeptHeads& kept = *r.kept;
    const auto row_bytes = static_cast<std::size_t>(kept.q.cols() + kept.k.cols()) * sizeof(float);
    const auto rows = static_cast<std::int64_t>(std::max<std::size_t>(1, bytes / std::max<std::size_t>(row_bytes, 1)));
    const std::int64_t r1 = std::min<std::int64_t>(r.row + rows, kept.T_q);
    answer_rows(*r.file, r.q, r.kept->q, r.row, r1);
    answer_rows(*r.file, r.k, r.kept->k, r.row, r1);
    r.row = r1;
    return r.row == kept.T_q;
}

// A short text whose maps came whole: its figure (this run's) is shown, and its layers' Q and K
// join it for Steps and the Q–K space.
bool whole_maps(const AppState& st) { return st.served.tokens <= st.served.maps_up_to; }

// The long text's figure (its first layer come), or the figure with another layer's Q and K (a
// short text's: beside its maps).
void show_layer(AppState& st, std::shared_ptr<const KeptHeads> kept) {
    ServedSession& s = st.served;
    auto remote = std::make_shared<RemoteMaps>();
    const bool whole = whole_maps(st);
    const bool same_run = s.shown == s.run && st.figure.has(Detail::Layers) && st.figure.remote == s.remote && (whole || s.remote);
    if (whole && !same_run) {  // the figure is another's now
        s.asked_layer = -1;
        return;
    }
    if (same_run && s.remote) {
        *remote = *s.remote;
    } else {
        if (!whole) remote->thumbnails = std::move(s.thumbnails);
        remote->d_model = s.d_model > 0 ? s.d_model : s.heads * kept->d_head;
    }
    remote->on_demand = !whole;
    auto held = [&] {
        std::size_t bytes = kept->bytes();
        for (const auto& [layer, k] : remote->layers) bytes += k->bytes();
        return bytes;
    };
    // Room for the new one: the others go, lowest first, never the one shown.
    for (auto old = remote->layers.begin();
         old != remote->layers.end() && (static_cast<int>(remote->layers.size()) >= kServedLayersKept || held() > kServedLayerBytes);) {
        if (st.figure.shown && old->first == st.imported.import_layer) ++old;
        else old = remote->layers.erase(old);
    }
    remote->layers[s.asked_layer] = std::move(kept);
    s.remote = remote;
    const int layer = std::exchange(s.asked_layer, -1);
    if (same_run) {
        st.figure.remote = std::move(remote);
        ImportView& im = st.imported;
        if (im.wanted_layer == layer) select_import_map(st, std::exchange(im.wanted_layer, -1), im.wanted_head);
        else if (whole && im.import_layer == layer) show_import(st);  // the layer shown: now from its Q and K
        return;
    }
    const std::string name = s.model + " (served)";
    auto layers = std::make_shared<ImportedAttention>();
    layers->model = name;
    AttentionStack stack;
    stack.name = "attention";
    stack.queries = stack.keys = s.run_tokens;
    stack.layers = s.layers, stack.heads = s.heads;
    layers->stacks.push_back(std::move(stack));
    Figure figure = layered_figure(std::move(layers), name, {s.causal && s.run_tokens.size() >= 2});
    StackArchitecture a;
    a.window = s.windows;
    a.window.resize(static_cast<size_t>(s.layers), 0);
    a.kv_heads = s.kv_heads;
    figure.architecture.push_back(std::move(a));
    figure.remote = std::move(remote);
    const bool keep = s.shown > 0 && st.figure.has(Detail::Layers);
    s.shown = s.run;
    show_layered_figure(st, std::move(figure), keep);
}

// The layer a long text shows first: a link's map waiting for the figure, the reader's choice
// when one stays, else the first.
int first_layer(const AppState& st) {
    const auto link = parse_import_map(st.link_map);
    const bool keep = st.served.shown > 0 && st.figure.has(Detail::Layers);
    const int layer = link ? link->layer - 1 : keep ? st.imported.import_layer : 0;
    return std::clamp(layer, 0, st.served.layers - 1);
}

}  // namespace

void connect_served(AppState& st, const std::string& server, const std::string& key) {
    ServedSession& s = st.served;
    if (s.server == server && s.key == key) return;
    const std::string text = s.text.empty() ? std::string("The cat sat on the mat.") : s.text;
    s = ServedSession{};
    s.server = server, s.key = key, s.text = text;
    send(s, ServedAsk::Info, "api/info");
}

std::vector<HeadRef> served_knocked_heads(const ServedSession& s) {
    std::vector<HeadRef> out;
    for (const HeadItem& item : parse_head_items(s.knockout).value_or(std::vector<HeadItem>{}))
        if (item.stack.empty() || item.stack == "attention") out.push_back({0, item.layer - 1, item.head - 1});
    return out;
}

void served_generate(AppState& st) {
    ServedSession& s = st.served;
    if (!s.active() || !s.connected() || s.waiting != 0) return;
    nlohmann::json body = input_body(s);
    body["tokens"] = std::clamp(s.generate_tokens, 1, 64);
    send(s, ServedAsk::Generate, "api/generate", body.dump());
}

void served_input_changed(AppState& st) {
    ServedSession& s = st.served;
    if (!s.active() || (s.text == s.ran && s.knockout == s.ran_knockout)) return;
    s.text_edited = true;
    if (s.waiting == 0 && s.connected()) send_run(s);
}

void served_reply(AppState& st, int id, int status, std::string body) {
    ServedSession& s = st.served;
    if (id != s.waiting) return;  // an answer to a session since replaced
    const ServedAsk asked = std::exchange(s.asked, ServedAsk::None);
    s.waiting = 0;
    const bool layer_questions = asked == ServedAsk::Thumbnails || asked == ServedAsk::Layer;  // of a run's layers
    if (layer_questions && s.text_edited) {  // a new text makes the questions about the last one's layers moot
        send_run(s);
        return;
    }
    // Its run is gone (other pages ran since): run again, a few times at most.
    if (status == 409 && (asked == ServedAsk::Maps || layer_questions) && s.reruns < kServedReruns) {
        ++s.reruns;
        send_run(s);
        return;
    }
    if (status != 200 && status != 0 && asked == ServedAsk::Layer && whole_maps(st)) {
        s.refused_layer = std::exchange(s.asked_layer, -1);  // a short text's layer keeps its maps: no error
        return;
    }
    if (status != 200) {
        s.error = s.server + ": " + served_problem(status, body);
        if (asked == ServedAsk::Layer && status != 0) s.refused_layer = std::exchange(s.asked_layer, -1);
        if (status == 0) {  // no server there (now): asked again, the figure kept
            s.lost = true;
            s.retry_at = -1;  // advance_served sets the time
        }
        return;
    }
    s.lost = false;
    s.error.clear();
    if (asked == ServedAsk::Maps) {
        s.reruns = 0;
        const std::string name = s.model + " (served)";
        try {
            auto imported = read_import_file(body, name);
            Figure figure = layered_figure(std::make_shared<const ImportedAttention>(std::move(imported)), name, {s.causal});
            const bool keep = s.shown > 0 && st.figure.has(Detail::Layers);  // the reader's choice stays
            show_layered_figure(st, std::move(figure), keep);
            s.shown = s.run;
        } catch (const std::exception& e) {
            s.error = name + ": " + e.what();
        }
        if (s.text_edited) send_run(s);
        else if (s.shown == s.run && s.layers > 0 && s.heads > 0)  // the layer shown's Q and K, for Steps and the Q–K space
            send_layer(s, std::clamp(st.imported.import_layer, 0, s.layers - 1));
        return;
    }
    if (layer_questions) {
        try {
            if (asked == ServedAsk::Thumbnails) {
                took_thumbnails(s, body);
                if (static_cast<int>(s.thumbnails.size()) < s.layers * s.heads) send_thumbnails(s);
                else send_layer(s, first_layer(st));
            } else {
                s.reruns = 0;
                s.reading = took_layer(s, std::move(body));  // into the block from the next frame on
            }
        } catch (const std::exception& e) {
            s.error = s.server + ": " + e.what();
            s.asked_layer = -1;
        }
        return;
    }
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_object()) {
        s.error = s.server + ": the answer is not JSON";
        return;
    }
    if (asked == ServedAsk::Info) took_info(s, j);
    else if (asked == ServedAsk::Run) took_run(s, j);
    else if (asked == ServedAsk::Generate && j.contains("text") && j["text"].is_string() && !s.text_edited) {
        s.text = j["text"].get<std::string>();  // the continued text runs (an edit meanwhile wins)
        send_run(s);
    }
    if (s.waiting == 0 && s.text_edited) send_run(s);
}

void advance_served(AppState& st, double now) {
    ServedSession& s = st.served;
    if (s.reading) {  // a layer's answer: a frame's rows, then its figure
        if (read_layer_rows(*s.reading, s.read_bytes_per_frame)) show_layer(st, std::exchange(s.reading, nullptr)->kept);
        return;
    }
    if (!s.active() || s.waiting != 0) return;
    // A long text's layer chosen whose Q and K are not here: asked for.
    const int layer = st.imported.wanted_layer;
    if (!s.lost && s.remote && st.figure.remote == s.remote && layer >= 0 && layer < s.layers && layer != s.refused_layer &&
        !st.figure.kept_layer(0, layer)) {
        send_layer(s, layer);
        return;
    }
    if (!s.lost) return;
    if (s.retry_at < 0) s.retry_at = now + kServedRetrySeconds;
    if (now < s.retry_at) return;
    s.retry_at = -1;
    s.model.clear();
    s.ran.clear();
    send(s, ServedAsk::Info, "api/info");  // then the text again
}

float served_reading_progress(const ServedSession& s) {
    if (!s.reading) return -1.0f;
    return static_cast<float>(s.reading->row) / static_cast<float>(std::max(s.reading->kept->T_q, 1));
}

bool awaiting_served_figure(const AppState& st) {
    return st.served.active() && !st.figure.has(Detail::Layers) && st.revision == st.served.placeholder_revision;
}

std::string served_summary(const AppState& st) {
    const ServedSession& s = st.served;
    const char* where = s.server == "." ? tr(st.lang, Str::ServedHere) : s.server.c_str();
    char line[512];
    if (s.connected()) std::snprintf(line, sizeof line, tr(st.lang, Str::ServedBy), s.model.c_str(), where);
    else if (!s.lost) std::snprintf(line, sizeof line, tr(st.lang, Str::ServedConnecting), where);
    else std::snprintf(line, sizeof line, tr(st.lang, awaiting_served_figure(st) ? Str::ServedLostNoFigure : Str::ServedLost), where);
    return line;
}

void add_served_json(const AppState& st, nlohmann::json& out) {
    const ServedSession& s = st.served;
    if (!s.active()) return;
    nlohmann::json top = nlohmann::json::array();
    for (const NextToken& t : s.top) top.push_back({{"id", t.id}, {"token", t.token}, {"p", t.p}});
    nlohmann::json layers = nlohmann::json::array();  // a long text's layers whose Q and K are here
    if (s.remote)
        for (const auto& [layer, kept] : s.remote->layers) layers.push_back(layer);
    out["served"] = {{"server", s.server}, {"model", s.model}, {"text", s.text}, {"run", s.run}, {"tokens", s.tokens},
                     {"error", s.error}, {"lost", s.lost}, {"busy", s.waiting != 0 || s.reading != nullptr}, {"top", top}, {"knockout", s.ran_knockout},
                     {"shown", s.shown}, {"thumbnail_layers", s.heads > 0 ? static_cast<int>(s.thumbnails.size()) / s.heads : 0},
                     {"asked_layer", s.asked_layer}, {"layers_here", layers}, {"awaiting_figure", awaiting_served_figure(st)}};
}

}  // namespace attn
