// served_state.cpp: see served_state.hpp.
#include "served_state.hpp"

#include "app_state.hpp"
#include "attention_file.hpp"
#include "import_state.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <utility>

namespace attn {

namespace {

constexpr double kServedRetrySeconds = 3.0;
constexpr int kServedReruns = 3;

void send(ServedSession& s, ServedAsk what, std::string path, std::string body = {}) {
    s.waiting = s.next_id++;
    s.asked = what;
    s.outbox.push_back({s.waiting, std::move(path), std::move(body)});
}

void send_run(ServedSession& s) {
    s.ran = s.text;
    s.text_edited = false;
    send(s, ServedAsk::Run, "api/run", nlohmann::json{{"text", s.text}}.dump());
}

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
    for (const nlohmann::json& t : j.value("top", nlohmann::json::array()))
        s.top.push_back({t.value("id", 0), t.value("token", std::string()), t.value("p", 0.0f)});
    if (s.tokens > s.maps_up_to) {
        s.error = std::to_string(s.tokens) + " tokens: past " + std::to_string(s.maps_up_to) +
                  ", the page does not yet ask a served model for regions of its maps (the figure shows the last text)";
        return;
    }
    send(s, ServedAsk::Maps, "api/maps?run=" + std::to_string(s.run));
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

void served_text_changed(AppState& st) {
    ServedSession& s = st.served;
    if (!s.active() || s.text == s.ran) return;
    s.text_edited = true;
    if (s.waiting == 0 && s.connected()) send_run(s);
}

void served_reply(AppState& st, int id, int status, std::string body) {
    ServedSession& s = st.served;
    if (id != s.waiting) return;  // an answer to a session since replaced
    const ServedAsk asked = std::exchange(s.asked, ServedAsk::None);
    s.waiting = 0;
    // Its run is gone (other pages ran since): run again, a few times at most.
    if (status == 409 && asked == ServedAsk::Maps && s.reruns < kServedReruns) {
        ++s.reruns;
        send_run(s);
        return;
    }
    if (status != 200) {
        s.error = s.server + ": " + served_problem(status, body);
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
        return;
    }
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_object()) {
        s.error = s.server + ": the answer is not JSON";
        return;
    }
    if (asked == ServedAsk::Info) took_info(s, j);
    else if (asked == ServedAsk::Run) took_run(s, j);
    if (s.waiting == 0 && s.text_edited) send_run(s);
}

void advance_served(AppState& st, double now) {
    ServedSession& s = st.served;
    if (!s.active() || !s.lost || s.waiting != 0) return;
    if (s.retry_at < 0) s.retry_at = now + kServedRetrySeconds;
    if (now < s.retry_at) return;
    s.retry_at = -1;
    s.model.clear();
    s.ran.clear();
    send(s, ServedAsk::Info, "api/info");  // then the text again
}

void add_served_json(const AppState& st, nlohmann::json& out) {
    const ServedSession& s = st.served;
    if (!s.active()) return;
    nlohmann::json top = nlohmann::json::array();
    for (const NextToken& t : s.top) top.push_back({{"id", t.id}, {"token", t.token}, {"p", t.p}});
    out["served"] = {{"server", s.server}, {"model", s.model}, {"text", s.text}, {"run", s.run}, {"tokens", s.tokens},
                     {"error", s.error}, {"lost", s.lost}, {"busy", s.waiting != 0}, {"top", top}};
}

}  // namespace attn
