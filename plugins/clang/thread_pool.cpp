#include "plugins/clang/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <atomic>

namespace tg::clangdev {

struct ThreadPool::Job {
  void (*fn)(void*, uint32_t);
  void* ctx;
  uint32_t n;
  std::atomic<uint32_t> next{0};
  uint32_t finished = 0;  // under mu_
  unsigned active = 0;    // workers inside this job, under mu_: the job lives on run()'s stack

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
  std::unique_lock lock(mu_);
  for (;;) {
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
    if (job->finished == job->n && job->active == 0) done_.notify_all();
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
  done_.wait(lock, [&] { return job.finished == job.n && job.active == 0; });
  job_ = nullptr;
}

}  // namespace tg::clangdev
