// served_state.hpp: the page as the front end of a model PyTorch runs elsewhere (issue 51;
// python/attnviz/_serve.py, docs/NOTEBOOK.md "A big model on your GPUs"). No ImGui here.
//
// A link's server= (the server's address, "." for the page's own) and key= (its random token)
// connect the app to attnviz.serve(). The reader's text goes to the server, which runs the model
// where it is and answers with the tokens; the maps come back as the import file (SPEC.md §3) and
// are shown as a layered figure, the choice of stack, layer and head kept from run to run:
//
//   text edited ─▶ POST /api/run ─▶ {run, tokens, top} ─▶ GET /api/maps?run= ─▶ import ─▶ figure
//
// A short text's figure then asks for the Q and K of the layer shown (Steps from Q, the Q–K
// space; the maps stay the server's), and of any other layer chosen:
//
//   import ─▶ GET /api/qk?layer= ─▶ figure (RemoteMaps, not on demand)
//
// A text past the maps the server sends whole (a long text) is a question per screen instead:
// each layer's thumbnails, every head's map pooled by the server to 64² blocks (the model view),
// then the Q and K of the layer shown, whose maps the page computes as a live run's long trace
// (figure.hpp RemoteMaps). Choosing another layer asks for its Q and K; the map shown stays
// until they come:
//
//   {run, tokens} ─▶ GET /api/region?layer=0…L−1&rows=64&cols=64 ─▶ GET /api/qk?layer= ─▶ figure
//
// Requests go out through the outbox (the app hands them to the page, platform::served_request)
// and come back through served_reply (main/served_hook.cpp). One run at a time: a text edited
// while one is out is sent when it is back. A server that stops answering is asked again every
// few seconds, and the figure stays meanwhile.
//
// [SECTION] The session
// [SECTION] What the app does with it
#pragma once

#include "figure.hpp"
#include "transformer.hpp"
#include "import.hpp"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace attn {

struct AppState;

// [SECTION] The session ------------------------------------------------------------------------

struct ServedRequest {
    int id = 0;
    std::string path;    // "api/run", "api/maps?run=3"
    std::string body;    // JSON for a POST; "" for a GET
};

enum class ServedAsk { None, Info, Run, Maps, Thumbnails, Layer, Generate };

struct ServedLayerReading;  // a layer's answer on its way into the block (served_state.cpp)

struct ServedSession {
    std::string server, key;         // the link's: the address ("." = the page's own) and the token
    std::string model;               // the server's name for it (/api/info), "" until it answers
    int maps_up_to = 512;            // tokens: past this the server sends no whole maps
    std::string text;                // what the reader typed; the server runs it
    std::string knockout;            // heads knocked out, as links write them ("2:3,1:1", from 1): the server zeroes their outputs
    std::string ran, ran_knockout;   // the input of the figure shown (or on its way)
    bool text_edited = false;        // the input changed since `ran` went out
    std::vector<NextToken> top;      // the model's likeliest next tokens after the text
    int generate_tokens = 8;         // Generate: this many greedy tokens, then the longer text runs
    int run = 0;                     // the server's last run
    int shown = 0;                   // the run the figure shows (0: none yet)
    int tokens = 0;
    bool causal = true;              // its self-attention is causal (a decoder's)
    // What the run said of itself; a long text's (past maps_up_to) layers' thumbnails so far; the
    // layers' Q and K come so far (the figure's, once shown).
    std::vector<std::string> run_tokens;
    int layers = 0, heads = 0, kv_heads = 0, d_model = 0;
    std::vector<int> windows;                  // per layer (0: none)
    std::vector<Matrix> thumbnails;            // layers·heads, filled a layer an answer
    std::shared_ptr<const RemoteMaps> remote;  // the figure's, once shown
    int asked_layer = -1;                      // the layer whose Q and K are out (or being read)
    // That layer's answer, read into the block a few rows a frame (advance_served), so that no frame
    // waits for all of it (a layer's Q and K are 25 MB at 8 192 tokens); null when none.
    std::shared_ptr<ServedLayerReading> reading;
    // About this many bytes of Q and K's floats a frame: 2 MB, a few ms where new memory costs
    // 3.7 ms a MB (docs/BENCHMARKS.md, "the page's frames while maps stream").
    std::size_t read_bytes_per_frame = std::size_t{2} << 20;
    int refused_layer = -1;                    // the layer the server would not send (not asked again)
    std::string error;               // the last answer's problem, "" when all is well
    bool lost = false;               // the server did not answer: asked again at `retry_at`
    double retry_at = 0;
    // In flight: one request at a time, and what it asked.
    int next_id = 1, waiting = 0;
    int reruns = 0;                     // runs sent again because the server forgot one
    // The revision of the scene a served link left behind it until its first figure comes
    // (apply_link): drawn as the server's state, not as a scene (-1: none).
    int placeholder_revision = -1;
    ServedAsk asked = ServedAsk::None;
    std::vector<ServedRequest> outbox;  // to send (the app empties it every frame)
    std::string inbox;                  // an answer's body as the page writes it (main/served_hook.cpp)

    bool active() const { return !server.empty(); }
    bool connected() const { return !model.empty() && !lost; }
};

// [SECTION] What the app does with it ------------------------------------------------------------

// Connects to a server (the link's server= and key=): asks what it serves, then runs the text.
void connect_served(AppState& st, const std::string& server, const std::string& key);
// The reader changed ServedSession::text or knockout: it runs once the request in flight is back.
void served_input_changed(AppState& st);
// Generate: the server continues the text by s.generate_tokens greedy tokens (the heads knocked
// out as in a run); the text becomes that and runs. Nothing when a request is out.
void served_generate(AppState& st);
// ServedSession::knockout as heads of the one stack (its malformed items left out: links check them).
std::vector<HeadRef> served_knocked_heads(const ServedSession& s);
// An answer to request `id`: HTTP status (0: no answer, `body` says why) and its bytes.
void served_reply(AppState& st, int id, int status, std::string body);
// Once a frame: a layer's answer read on into the block (its figure shown once it is all in); a
// lost server asked again when its time comes (now: seconds, any clock); a long text's layer
// chosen in the app asked for when its Q and K are not at hand.
void advance_served(AppState& st, double now);
// How much of a layer's answer is in the block (0…1), or −1 when none is being read.
float served_reading_progress(const ServedSession& s);
// A served link's figure has not come yet: the canvas shows the server's state (its address, a
// problem) instead of the scene behind it, which nobody chose. Any change of the scene shows it.
bool awaiting_served_figure(const AppState& st);
// What the panel and that canvas say of the server: "run by MODEL at ADDRESS", "connecting to …",
// "… does not answer" (the reader's language).
std::string served_summary(const AppState& st);
// The "served" object of the state the browser tests read.
void add_served_json(const AppState& st, nlohmann::json& out);

}  // namespace attn
