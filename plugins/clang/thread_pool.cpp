#include "plugins/clang/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tg::clangdev {

namespace {

// How long a worker (for the next launch) or run() (for the workers' last tasks) spins before it sleeps
// on the condition variable. A replayed graph launches kernels back to back, tens of microseconds apart:
// a futex wake-up costs about as much as a small kernel, more in a virtual machine.
constexpr auto kSpin = std::chrono::microseconds(100);

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spins until done() or kSpin has passed; returns done().
template <class F>
bool spin_until(F done) {
  auto until = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) return done();
  }
}

}  // namespace

struct ThreadPool::Job {
  void (*fn)(void*, uint32_t);
  void* ctx;
  uint32_t n;
  std::atomic<uint32_t> next{0};
  uint32_t finished = 0;              // under mu_
  unsigned active = 0;                // workers inside this job, under mu_: the job lives on run()'s stack
  std::atomic<bool> complete{false};  // finished == n and active == 0, set under mu_ (run() spins on it)

  uint32_t drain() {
    uint32_t count = 0;
    for (uint32_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n; ++count) fn(ctx, i);
    return count;
  }
};

ThreadPool::ThreadPool(CoreSet cores) {
  for (unsigned i = 1; i < cores.count; ++i) {
    workers_.emplace_back([this] { worker_loop(); });
    if (!cores.pinned) continue;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cores.first + i, &set);  // the caller runs task 0 wherever it is; workers stay on their slice
    pthread_setaffinity_np(workers_.back().native_handle(), sizeof(set), &set);  // best effort
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen || stop_.load(); });
    std::unique_lock lock(mu_);
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    Job* job = job_;
    if (job == nullptr) continue;
    ++job->active;
    lock.unlock();
    uint32_t count = job->drain();
    lock.lock();
    job->finished += count;
    --job->active;
    if (job->finished == job->n && job->active == 0) {
      job->complete.store(true, std::memory_order_release);
      done_.notify_all();
    }
  }
}

void ThreadPool::run(uint32_t n, void (*fn)(void*, uint32_t), void* ctx) {
  if (n == 0) return;
  if (n == 1 || workers_.empty()) {
    for (uint32_t i = 0; i < n; ++i) fn(ctx, i);
    return;
  }
  std::lock_guard run_lock(run_mu_);
  Job job{fn, ctx, n};
  {
    std::lock_guard lock(mu_);
    job_ = &job;
    ++generation_;
  }
  wake_.notify_all();
  uint32_t mine = job.drain();
  std::unique_lock lock(mu_);
  job.finished += mine;
  if (job.finished != job.n || job.active != 0) {  // workers are still on their last tasks
    lock.unlock();
    spin_until([&] { return job.complete.load(std::memory_order_acquire); });
    lock.lock();
    done_.wait(lock, [&] { return job.finished == job.n && job.active == 0; });
  }
  job_ = nullptr;
}

}  // namespace tg::clangdev
