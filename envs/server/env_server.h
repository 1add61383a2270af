#pragma once
// Serves environment slots over ZeroMQ (docs/env_protocol.md): clients create envs in slots,
// then reset and step many slots per message.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <zmq.hpp>

#include "envs/env.h"
#include "envs/server/protocol.h"

namespace turnrl::envs::server {

struct EnvServerOptions {
  /** A ZeroMQ endpoint; "tcp://127.0.0.1:*" binds a free port (see EnvServer::endpoint()). */
  std::string bind = "tcp://127.0.0.1:5555";
  int slots = 16;
  /** A client silent this long loses its slots (any message, a ping included, counts as life). */
  std::chrono::milliseconds client_timeout{60000};
};

/**
 * The server: one ROUTER socket, so several clients (DEALER or REQ) can share it; slots belong to
 * the client that created them. Single-threaded: run() owns the socket and every env, and steps a
 * batch's slots one after the other. Bad input gets an error reply and never stops the server.
 */
class EnvServer {
 public:
  /** Binds; throws std::runtime_error when the endpoint cannot be bound. */
  explicit EnvServer(EnvServerOptions options);
  EnvServer(const EnvServer&) = delete;
  EnvServer& operator=(const EnvServer&) = delete;

  /** The bound endpoint, with the port a wildcard bind picked. */
  const std::string& endpoint() const { return endpoint_; }

  /** Serves until `stop` becomes true; notices it within kStopCheck. */
  void run(const std::atomic<bool>& stop);
  static constexpr std::chrono::milliseconds kStopCheck{100};

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot {
    std::string owner;  // the client's ZeroMQ routing id; empty while the slot is free
    std::unique_ptr<Env> env;
    bool has_reset = false;
  };

  /** Handles one request payload from `client` and returns the reply payload; never throws. */
  std::string handle(const std::string& client, std::string_view payload);
  nlohmann::json serve(const std::string& client, const HelloRequest& request);
  nlohmann::json serve(const std::string& client, const PingRequest& request);
  nlohmann::json serve(const std::string& client, const CreateRequest& request);
  // Reset and step replies are written as text (encode_reset_reply, encode_step_reply): the hot path.
  std::vector<EpisodeStart> serve(const std::string& client, const ResetRequest& request);
  std::vector<StepOutcome> serve(const std::string& client, const StepRequest& request);
  nlohmann::json serve(const std::string& client, const CloseRequest& request);
  nlohmann::json serve(const std::string& client, const RenderRequest& request);
  nlohmann::json serve(const std::string& client, const StateRequest& request);
  nlohmann::json serve(const std::string& client, const GoldenScriptRequest& request);

  /** The slot, checked to belong to `client` (and to have been reset, if `need_reset`). */
  Slot& owned_slot(const std::string& client, int slot, bool need_reset);
  void drop_silent_clients();

  EnvServerOptions options_;
  zmq::context_t context_;
  zmq::socket_t socket_;
  std::string endpoint_;
  std::vector<Slot> slots_;
  std::unordered_map<std::string, Clock::time_point> last_seen_;
};

}  // namespace turnrl::envs::server
