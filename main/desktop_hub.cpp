// desktop_hub.cpp: the desktop's side of platform.hpp's models by name (SPEC.md §6): the fetch
// on a thread of its own (hub_fetch.hpp, libcurl), and the Hub's address ($HF_ENDPOINT).
// Here, not in web/platform: the platform layer includes nothing of core (docs/ARCHITECTURE.md).
#include "hub_fetch.hpp"
#include "platform.hpp"

#include <atomic>
#include <mutex>
#include <thread>

namespace attn::platform {

namespace {

class ThreadHubFetch final : public HubFetch {
public:
    explicit ThreadHubFetch(const std::string& id) : thread_([this, id] { run(id); }) {}
    ~ThreadHubFetch() override {
        cancel();
        thread_.join();
    }
    Status status() const override {
        std::lock_guard<std::mutex> lock(mutex_);
        return status_;
    }
    void cancel() override { cancelled_ = true; }

private:
    void run(const std::string& id) {
        std::string snapshot, error;
        try {
            FetchOptions o;
            o.progress = [this](const FetchProgress& p) {
                std::lock_guard<std::mutex> lock(mutex_);
                status_.file = p.file;
                status_.file_done = static_cast<double>(p.file_done);
                status_.file_size = static_cast<double>(p.file_size);
                status_.done = static_cast<double>(p.done);
                status_.total = static_cast<double>(p.total);
                return !cancelled_;
            };
            if (cancelled_) throw ModelError(id, "", "cancelled");
            snapshot = hub_snapshot(*hub::parse_repo_id(id), o);
        } catch (const std::exception& e) {
            error = e.what();
        }
        std::lock_guard<std::mutex> lock(mutex_);
        status_.snapshot = snapshot;
        status_.error = error;
        status_.finished = true;
    }

    mutable std::mutex mutex_;
    Status status_;
    std::atomic<bool> cancelled_{false};
    std::thread thread_;  // last: starts once the rest is made
};

}  // namespace

std::unique_ptr<HubFetch> HubFetch::start(const std::string& id) { return std::make_unique<ThreadHubFetch>(id); }
void hub_dialog_opened(const char*) {}
void remove_stored_hub(const char*, const char*) {}
std::string hub_endpoint() { return hub::environment().endpoint; }
void set_hub_endpoint(const char*) {}

}  // namespace attn::platform
