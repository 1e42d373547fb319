#pragma once
// The viewer's web server: the page, the trace as JSON, graphs as SVG. Bound to 127.0.0.1 only, and it
// serves nothing but the trace, the page and highlight.js from its Debian folder.
#include <memory>
#include <string>

#include "viz/trace.hpp"

namespace httplib {
class Server;
}

namespace tg::viz {

class Server {
 public:
  explicit Server(Trace t);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds 127.0.0.1:port (0 = any free port) and returns the port; a port in use is a DeviceError.
  int bind(int port);
  void listen();  // serves until stop()
  void stop();

 private:
  std::shared_ptr<const Trace> trace_;
  std::unique_ptr<httplib::Server> http_;
};

// VIZ_PORT (default 8000); ValueError when it is not a port number.
int port_from_env();
// Prints the URL, then serves until the process is interrupted.
void serve(Trace t, int port);

// The page (page.cpp): one HTML file with its script and styles inline.
extern const char* const kPage;

}  // namespace tg::viz
