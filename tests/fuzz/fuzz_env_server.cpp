// Fuzzes a running env server (a thread of this process on a loopback port, as test_env_server
// runs it) with arbitrary messages: the input's lines, sent in order by one client. Every message
// must get a reply, with the request's id, that is an error or the request's own reply type; the
// server must never crash. Each input ends by closing the client's slots, so inputs start alike.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>

#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "envs/server/env_server.h"
#include "envs/server/protocol.h"
#include "fuzz_util.h"

using namespace turnrl::envs::server;
using turnrl::fuzz::check;

namespace {

constexpr int kSlots = 4;
constexpr size_t kMaxMessages = 16;
// Creating the largest env the registry allows (a 4096x4096 Crafter world) takes seconds.
constexpr std::chrono::milliseconds kReplyTimeout{60000};

/** The server thread and one DEALER client connected to it. */
class Connection {
 public:
  Connection()
      : server_({"tcp://127.0.0.1:*", kSlots, std::chrono::hours(1)}),
        thread_([this] { server_.run(stop_); }),
        client_(context_, zmq::socket_type::dealer) {
    client_.set(zmq::sockopt::linger, 0);
    client_.connect(server_.endpoint());
  }
  ~Connection() {
    stop_ = true;
    thread_.join();
  }

  /** The reply to `payload`; a missing reply is a finding. */
  nlohmann::json exchange(std::string_view payload) {
    client_.send(zmq::buffer(payload), zmq::send_flags::none);
    zmq::pollitem_t item{client_.handle(), 0, ZMQ_POLLIN, 0};
    for (;;) {
      try {
        zmq::poll(&item, 1, kReplyTimeout);
        break;
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw;  // libFuzzer's timer signal interrupted the wait: wait again
      }
    }
    zmq::message_t reply;
    check((item.revents & ZMQ_POLLIN) && client_.recv(reply, zmq::recv_flags::dontwait), "the server replies");
    const nlohmann::json parsed = nlohmann::json::parse(reply.to_string_view(), nullptr, /*allow_exceptions=*/false);
    check(parsed.is_object() && parsed.contains("type") && parsed["type"].is_string(), "a reply is an object with a type");
    return parsed;
  }

 private:
  EnvServer server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  zmq::context_t context_{1};
  zmq::socket_t client_;
};

Connection& connection() {
  // The server thread logs until it stops, at exit: spdlog's registry must be destroyed after this
  // object, so it is created before it (statics are destroyed in reverse order).
  spdlog::default_logger();
  static Connection instance;
  return instance;
}

void check_reply(std::string_view payload, const nlohmann::json& reply) {
  check(reply.value("id", nlohmann::json()) == nlohmann::json(request_id_of(payload)), "the reply has the request's id");
  if (reply["type"] == "error") {
    check(reply.contains("message") && reply["message"].is_string(), "an error reply has a message");
    return;
  }
  // Anything but an error means the request was valid, and the reply is its type's.
  const Request request = decode_request(payload, kSlots);
  check(reply["type"] == reply_type(request.body), "the reply has the request's reply type");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Connection& server = connection();
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  for (size_t sent = 0; sent < kMaxMessages && !rest.empty(); ++sent) {
    const size_t end = rest.find('\n');
    const std::string_view message = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    check_reply(message, server.exchange(message));
  }
  for (int slot = 0; slot < kSlots; ++slot) {
    server.exchange(R"({"type": "close", "slots": [)" + std::to_string(slot) + "]}");
  }
  return 0;
}
