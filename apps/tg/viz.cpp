// `tg viz FILE`: serves a trace saved with VIZ=1 VIZ_OUT=FILE on 127.0.0.1 (VIZ_PORT, default 8000).
#include <string>

#include <fmt/format.h>

#include "apps/tg/commands.hpp"
#include "base/error.hpp"
#include "viz/server.hpp"
#include "viz/trace.hpp"

namespace tg::cli {

int viz(Args args) {
  if (args.size() != 1) {
    fmt::print(stderr, "usage: tg viz TRACE.json   (write one with VIZ=1 VIZ_OUT=TRACE.json <program>)\n");
    return 2;
  }
  tg::viz::Trace t = tg::viz::read_trace(std::string(args[0]));
  tg::viz::serve(std::move(t), tg::viz::port_from_env());
  return 0;
}

}  // namespace tg::cli
