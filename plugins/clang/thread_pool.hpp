#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace tg::clangdev {

// The cores a pool runs on; `pinned` binds its workers to them (several CLANG devices on one machine).
struct CoreSet {
  unsigned first = 0, count = 1;
  bool pinned = false;
};

// Persistent workers that run the parallel tasks of one launch; the calling thread takes tasks too.
class ThreadPool {
 public:
  explicit ThreadPool(CoreSet cores);  // cores.count threads in total, including the caller
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }
  // Calls fn(ctx, i) for every i in [0, n) and returns when all calls are done. One run at a time.
  void run(uint32_t n, void (*fn)(void*, uint32_t), void* ctx);

 private:
  struct Job;
  void worker_loop();

  std::mutex run_mu_;  // serializes run()
  std::mutex mu_;
  std::condition_variable wake_, done_;
  Job* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};  // written under mu_; workers spin on it before they sleep
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

}  // namespace tg::clangdev
