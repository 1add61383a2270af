#include "tools/serve/stub_http_server.h"

#include <chrono>

namespace turnrl::serve {

namespace {

HttpServerOptions loopback(double idle_s) {
  HttpServerOptions options;
  options.stop_when_idle = std::chrono::milliseconds(static_cast<int64_t>(idle_s * 1000));
  return options;
}

}  // namespace

StubHttpServer::StubHttpServer(Script script, double idle_s)
    : script_(std::move(script)),
      server_(loopback(idle_s), [this](const HttpRequest& request, const HttpResponder& responder) { answer(request, responder); }),
      thread_([this] { server_.run(); }) {}

StubHttpServer::~StubHttpServer() {
  server_.stop();
  thread_.join();
}

void StubHttpServer::answer(const HttpRequest& request, const HttpResponder& responder) {
  const int index = served_++;
  const int in_flight = ++in_flight_;
  if (in_flight > max_in_flight_) max_in_flight_ = in_flight;  // only the loop's thread writes it
  const StubReply scripted = script_(index, request.target, nlohmann::json::parse(request.body, nullptr, false));
  HttpReply reply{scripted.status, scripted.body.dump()};
  reply.hang_up = scripted.hang_up;
  reply.headers = scripted.headers;
  server_.post(
      [this, responder, reply = std::move(reply)]() mutable {
        --in_flight_;
        responder.respond(std::move(reply));
      },
      std::chrono::milliseconds(scripted.delay_ms));
}

}  // namespace turnrl::serve
