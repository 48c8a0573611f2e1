// pool.cpp: the pool's threads, and how a job reaches them (pool.hpp).
//
// A job: the caller writes the function, its argument and the number of parts, sets `busy` to
// the number of pool threads and bumps `generation` (under the mutex, then wakes them). Every
// thread takes parts from `next` until none is left, then counts itself out of `busy`; the
// caller takes parts the same way, then waits for `busy` to reach 0, so no thread still reads
// the job when run() returns and the next job can be written.
#include "pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define ATTN_POOL_THREADS 0  // a page module built without -pthread: the caller alone
#else
#define ATTN_POOL_THREADS 1
#endif

namespace attn::kernels {

struct Pool::Shared {
    std::mutex turn;  // callers on several threads take turns (a run off the frame loop, and the frame's)
    std::mutex mutex;
    std::condition_variable wake;  // a new job, or the pool's end
    std::condition_variable idle;  // busy reached 0
    std::atomic<unsigned> generation{0};
    bool stop = false;  // under the mutex

    // The job (written by the caller while every thread waits for the next generation)
    Call call = nullptr;
    void* fn = nullptr;
    int parts = 0;
    std::atomic<int> next{0};  // the next part to take
    std::atomic<int> busy{0};  // pool threads not yet done with this job
    std::exception_ptr error;  // under the mutex: the first a part threw

    void work(int worker) {
        for (int part; (part = next.fetch_add(1, std::memory_order_relaxed)) < parts;) {
            try {
                call(fn, part, worker);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(mutex);
                if (!error) error = std::current_exception();
            }
        }
    }
};

namespace {

// Spins a while `done` is false (jobs follow each other closely in a forward pass, and waking a
// sleeping thread costs tens of microseconds natively, more between Web Workers); true if it
// became true.
#if defined(__EMSCRIPTEN__)
constexpr auto kSpin = std::chrono::microseconds(1000);
#else
constexpr auto kSpin = std::chrono::microseconds(100);
#endif
template <class Done>
bool spin(Done done) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 1;; ++i) {
        if (done()) return true;
#if defined(__x86_64__)
        _mm_pause();
#endif
        if (i % 64 == 0 && std::chrono::steady_clock::now() > until) return false;
    }
}

}  // namespace

int Pool::threads_for(int asked) { return ATTN_POOL_THREADS ? std::max(asked, 1) : 1; }

Pool::Pool(int threads) : shared_(std::make_unique<Shared>()) {
    const int extra = threads_for(threads) - 1;
    threads_.reserve(static_cast<std::size_t>(extra));
    for (int w = 1; w <= extra; ++w) threads_.emplace_back([this, w] { serve(w); });
}

Pool::~Pool() {
    {
        const std::lock_guard<std::mutex> lock(shared_->mutex);
        shared_->stop = true;
    }
    shared_->wake.notify_all();
    for (std::thread& t : threads_) t.join();
}

int Pool::hardware_threads(int most) {
    return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, std::max(most, 1));
}

void Pool::serve(int worker) {
    Shared& s = *shared_;
    unsigned seen = 0;
    for (;;) {
        if (!spin([&] { return s.generation.load(std::memory_order_acquire) != seen; })) {
            std::unique_lock<std::mutex> lock(s.mutex);
            s.wake.wait(lock, [&] { return s.stop || s.generation.load(std::memory_order_acquire) != seen; });
            if (s.stop) return;
        }
        seen = s.generation.load(std::memory_order_acquire);
        s.work(worker);
        if (s.busy.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            const std::lock_guard<std::mutex> lock(s.mutex);
            s.idle.notify_one();
        }
    }
}

void Pool::run_job(int parts, Call call, void* fn) {
    if (parts <= 0) return;
    if (threads_.empty() || parts == 1) {
        for (int part = 0; part < parts; ++part) call(fn, part, 0);
        return;
    }
    Shared& s = *shared_;
    const std::lock_guard<std::mutex> turn(s.turn);
    {
        const std::lock_guard<std::mutex> lock(s.mutex);
        s.call = call, s.fn = fn, s.parts = parts;
        s.next.store(0, std::memory_order_relaxed);
        s.busy.store(static_cast<int>(threads_.size()), std::memory_order_relaxed);
        s.generation.fetch_add(1, std::memory_order_release);
    }
    s.wake.notify_all();
    s.work(0);
    if (!spin([&] { return s.busy.load(std::memory_order_acquire) == 0; })) {
        std::unique_lock<std::mutex> lock(s.mutex);
        s.idle.wait(lock, [&] { return s.busy.load(std::memory_order_acquire) == 0; });
    }
    std::exception_ptr error;
    {
        const std::lock_guard<std::mutex> lock(s.mutex);
        std::swap(error, s.error);
    }
    if (error) std::rethrow_exception(error);
}

}  // namespace attn::kernels
