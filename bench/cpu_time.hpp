#pragma once
// CPU seconds of the whole process (every thread, user and system): on a busy machine a steadier figure
// than wall time.
#include <sys/resource.h>

namespace tg::bench {

inline double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace tg::bench
