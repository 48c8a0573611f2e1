// pool.cpp: the pool's threads, and how a job reaches them (pool.hpp).
//
// A job: the caller writes the function and its argument, then publishes the job in `ticket`
// (its number, its parts and the next part to take, one 64-bit word) and wakes the threads that
// sleep. Every thread (the caller too) claims parts by moving the ticket's next part on with a
// compare-and-swap that also checks the job's number, so a thread that wakes late, after the job
// has ended or a later one has begun, claims nothing of it and reads nothing of it. The caller
// returns once `done` counts every part: it never waits for a thread that took no part (a Web
// Worker asleep can take milliseconds to wake; the caller runs the parts itself rather
// than wait for it).
#include "pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if !defined(__EMSCRIPTEN__)
#include <unistd.h>
#endif

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define ATTN_POOL_THREADS 0  // a page module built without -pthread: the caller alone
#else
#define ATTN_POOL_THREADS 1
#endif

namespace attn::kernels {

namespace {

// The ticket: the job's number (bits 40-63, counting on from 1), its parts (20-39) and the next
// part to take (0-19). A thread that held a stale ticket through 2^24 jobs could mistake it for
// the current one; a stale ticket is held between two loads and a compare-and-swap.
constexpr int kPartBits = 20;
constexpr std::uint64_t kPartMask = (std::uint64_t{1} << kPartBits) - 1;
constexpr std::uint64_t kJobMask = (std::uint64_t{1} << (64 - 2 * kPartBits)) - 1;
std::uint64_t job_of(std::uint64_t t) { return t >> (2 * kPartBits); }
int parts_of(std::uint64_t t) { return static_cast<int>((t >> kPartBits) & kPartMask); }
int next_of(std::uint64_t t) { return static_cast<int>(t & kPartMask); }

}  // namespace

struct Pool::Shared {
    std::mutex turn;  // callers on several threads take turns (a run off the frame loop, and the frame's)
    std::mutex mutex;
    std::condition_variable wake;  // a new job, or the pool's end
    std::condition_variable idle;  // the caller's job has ended
    std::atomic<std::uint64_t> ticket{0};
    std::atomic<bool> caller_waits{false};  // the caller sleeps on `idle` (set under the mutex)
    std::atomic<int> active{1};  // set_threads: workers from this one on sleep (changed under the mutex)
    bool stop = false;  // under the mutex

    // The job (written by the caller before it publishes the ticket, read by a thread only after
    // it has claimed a part of that ticket's job)
    Call call = nullptr;
    void* fn = nullptr;
    std::atomic<int> done{0};  // the job's parts that have ended
    std::exception_ptr error;  // under the mutex: the first a part threw

    // Timing (set_timing): the parts' nanoseconds, summed and the longest, of the job running;
    // the totals, written by the caller between jobs
    std::atomic<bool> timing{false};
    std::atomic<long long> busy_ns{0}, longest_ns{0};
    PoolTimes times;
#if defined(__EMSCRIPTEN__)
    std::atomic<int> spin_us{1000};
#else
    std::atomic<int> spin_us{100};
#endif

    void timed_call(int part, int worker) {
        if (!timing.load(std::memory_order_relaxed)) return call(fn, part, worker);
        const auto t0 = std::chrono::steady_clock::now();
        call(fn, part, worker);
        const long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
        busy_ns.fetch_add(ns, std::memory_order_relaxed);
        long long seen = longest_ns.load(std::memory_order_relaxed);
        while (ns > seen && !longest_ns.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
        }
    }

    // Claims and runs parts of job `job` while it is the published one and has some left.
    void work(int worker, std::uint64_t job) {
        std::uint64_t t = ticket.load(std::memory_order_acquire);
        while (job_of(t) == job && next_of(t) < parts_of(t)) {
            if (!ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
            try {
                timed_call(next_of(t), worker);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(mutex);
                if (!error) error = std::current_exception();
            }
            if (done.fetch_add(1) + 1 == parts_of(t) && worker != 0 && caller_waits.load()) {
                const std::lock_guard<std::mutex> lock(mutex);
                idle.notify_one();
            }
            t = ticket.load(std::memory_order_acquire);
        }
    }
};

namespace {

// Spins `us` microseconds while `done` is false (jobs follow each other closely in a forward
// pass, and waking a sleeping thread costs tens of microseconds natively, more between Web
// Workers); true if it became true.
template <class Done>
bool spin(int us, Done done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
    for (int i = 1;; ++i) {
        if (done()) return true;
#if defined(__x86_64__)
        _mm_pause();
#endif
        if (i % 64 == 0 && std::chrono::steady_clock::now() > until) return false;
    }
}

}  // namespace

void keep_freed_memory() {
#if defined(__GLIBC__)
    ::mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's most (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit)
    // What may stay free at the heap's top: a whole run's kept maps, freed as the next run
    // starts, for that run (Llama-3.2-1B's shape at 512 tokens keeps 512 MB of them; at 256 MB
    // SmolLM2's 270 MB went back to the system after every run and were faulted in again).
    ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

std::uint64_t machine_memory() {
#if defined(__EMSCRIPTEN__)
    return UINT64_MAX;
#else
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : UINT64_MAX;
#endif
}

int Pool::threads_for(int asked) { return ATTN_POOL_THREADS ? std::max(asked, 1) : 1; }

Pool::Pool(int threads) : shared_(std::make_unique<Shared>()) {
    const int extra = threads_for(threads) - 1;
    threads_.reserve(static_cast<std::size_t>(extra));
    shared_->active = extra + 1;
    for (int w = 1; w <= extra; ++w) threads_.emplace_back([this, w] { serve(w); });
}

int Pool::threads() const { return shared_->active.load(std::memory_order_relaxed); }

void Pool::set_threads(int threads) {
    {
        const std::lock_guard<std::mutex> lock(shared_->mutex);
        shared_->active.store(std::clamp(threads, 1, capacity()), std::memory_order_relaxed);
    }
    shared_->wake.notify_all();
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
    std::uint64_t seen = 0;  // the job this thread last looked at
    const auto fresh = [&] {
        return worker < s.active.load(std::memory_order_relaxed) && job_of(s.ticket.load(std::memory_order_acquire)) != seen;
    };
    for (;;) {
        if (worker >= s.active.load(std::memory_order_relaxed) || !spin(s.spin_us.load(std::memory_order_relaxed), fresh)) {
            std::unique_lock<std::mutex> lock(s.mutex);
            s.wake.wait(lock, [&] { return s.stop || fresh(); });
            if (s.stop) return;
        }
        seen = job_of(s.ticket.load(std::memory_order_acquire));
        // (set_threads before the job was published: the ticket's acquire shows it)
        if (worker < s.active.load(std::memory_order_relaxed)) s.work(worker, seen);
    }
}

void Pool::set_timing(bool on) {
    const std::lock_guard<std::mutex> turn(shared_->turn);
    shared_->timing.store(on);
    shared_->times = PoolTimes{};
}

PoolTimes Pool::times() const {
    const std::lock_guard<std::mutex> turn(shared_->turn);
    return shared_->times;
}

void Pool::set_spin_us(int us) { shared_->spin_us.store(std::max(us, 0)); }

void Pool::run_job(int parts, Call call, void* fn) {
    if (parts <= 0) return;
    if (threads() == 1 || parts == 1) {
        for (int part = 0; part < parts; ++part) call(fn, part, 0);
        return;
    }
    if (static_cast<std::uint64_t>(parts) > kPartMask)
        throw std::invalid_argument("Pool::run: " + std::to_string(parts) + " parts (at most " + std::to_string(kPartMask) + ")");
    Shared& s = *shared_;
    const std::lock_guard<std::mutex> turn(s.turn);
    const bool timing = s.timing.load(std::memory_order_relaxed);
    const auto start = timing ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    s.call = call, s.fn = fn;
    s.done.store(0, std::memory_order_relaxed);
    const std::uint64_t job = (job_of(s.ticket.load(std::memory_order_relaxed)) + 1) & kJobMask;
    {
        const std::lock_guard<std::mutex> lock(s.mutex);  // a thread about to sleep sees the job, or is woken
        s.ticket.store((job << (2 * kPartBits)) | (static_cast<std::uint64_t>(parts) << kPartBits), std::memory_order_release);
    }
    s.wake.notify_all();
    s.work(0, job);
    const auto ended = [&] { return s.done.load() == parts; };
    if (!spin(s.spin_us.load(std::memory_order_relaxed), ended)) {
        std::unique_lock<std::mutex> lock(s.mutex);
        s.caller_waits.store(true);
        s.idle.wait(lock, ended);
        s.caller_waits.store(false);
    }
    if (timing) {  // this job's times into the totals
        s.times.jobs += 1, s.times.parts += parts;
        s.times.wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        s.times.busy_s += static_cast<double>(s.busy_ns.exchange(0)) * 1e-9;
        s.times.longest_s += static_cast<double>(s.longest_ns.exchange(0)) * 1e-9;
    }
    std::exception_ptr error;
    {
        const std::lock_guard<std::mutex> lock(s.mutex);
        std::swap(error, s.error);
    }
    if (error) std::rethrow_exception(error);
}

}  // namespace attn::kernels
