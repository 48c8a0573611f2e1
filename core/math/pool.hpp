// pool.hpp: a fixed set of threads that run the parts of one job at a time (the column blocks of
// a product, the heads of an attention block), owned by its caller as kernels::Context is.
//
// A job is parts 0 … n − 1, each independent of the others and written to its own memory, so
// the numbers never depend on which thread ran a part, nor on how many threads there are. The
// caller runs parts too (it is worker 0) and returns when every part has ended. Nothing is
// allocated per job: the job is a function pointer and its argument, the parts an atomic counter.
// The threads wait on a condition variable between jobs, after spinning briefly (a forward pass
// runs a job every few hundred microseconds: GPT-2 small at T = 128, about 60 per pass).
//
// A build without threads (the page's modules outside a cross-origin isolated page) has one:
// the caller, whatever was asked.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

namespace attn::kernels {

// Natively with glibc: big blocks freed stay in the process for the next (malloc's mmap
// threshold and trim threshold raised), where glibc would give each back to the system and
// fault its pages in again at the next block's allocation: the forward pass allocates its
// buffers block by block (SmolLM2-135M's shape at T = 128: 8 % of a forward in page faults, and
// the faults of two threads take turns on the process's memory lock; at T = 512 on 16 threads,
// the kept maps' pages made each part of a job 3.2 × slower: BENCHMARKS.md). Up to 1 GB stays
// free at the heap's top, what a run's kept maps take, for the next run's. A
// program's main calls it once, before any thread starts; elsewhere it does nothing.
void keep_freed_memory();
// This machine's physical memory in bytes (sysconf); the most a uint64 holds where it cannot
// be told (a page: its own limit is the caller's to apply).
std::uint64_t machine_memory();

// What a pool's jobs of several parts on several threads took since timing was turned on
// (benchmarks: Pool::set_timing): their wall time from the caller's start to the last part's
// end, the parts' own times summed over every thread, and each job's longest part summed over
// the jobs. wall − longest is what waking and claiming cost; busy against the same work on one
// thread is what running beside each other costs the parts.
struct PoolTimes {
    long long jobs = 0, parts = 0;
    double wall_s = 0, busy_s = 0, longest_s = 0;
};

class Pool {
public:
    // `threads` in all, the caller's included (at least 1; a build without threads has 1): starts
    // threads − 1 of them, which wait for jobs until the pool is destroyed.
    explicit Pool(int threads);
    ~Pool();
    Pool(const Pool&) = delete;
    Pool& operator=(const Pool&) = delete;

    // The threads a job may use now (set_threads), and the most it may be set to: those started.
    int threads() const;
    int capacity() const { return static_cast<int>(threads_.size()) + 1; }
    // Jobs from now on use `threads` of them (clamped to 1 … capacity()); the others sleep. Starting
    // and joining threads while a page runs can wait on its main thread, so a setting moves this.
    void set_threads(int threads);

    // f(part, worker) for every part in [0, parts), worker in [0, capacity()) the one running it
    // (0: the caller), for memory of its own. One job at a time: callers on several threads take
    // turns (never from inside a part). The first exception a part throws is rethrown here once
    // all have ended.
    template <class F>
    void run(int parts, F&& f) {
        run_job(parts, [](void* fn, int part, int worker) { (*static_cast<F*>(fn))(part, worker); }, &f);
    }

    // Timing (off by default: two clock reads a part) and what it has counted; one caller at a
    // time while it is on. A job's threads spin `us` microseconds for the next job before they
    // sleep (natively 100, in the page 1000).
    void set_timing(bool on);
    PoolTimes times() const;
    void set_spin_us(int us);

    // What std::thread says this machine has (at least 1), at most `most`.
    static int hardware_threads(int most = 1 << 10);
    // The threads a Pool(asked) has in this build: `asked` (at least 1), or 1 without threads.
    static int threads_for(int asked);

private:
    using Call = void (*)(void*, int, int);
    void run_job(int parts, Call call, void* fn);
    void serve(int worker);

    struct Shared;
    std::unique_ptr<Shared> shared_;
    std::vector<std::thread> threads_;
};

}  // namespace attn::kernels
