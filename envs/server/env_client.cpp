#include "envs/server/env_client.h"

#include <algorithm>
#include <cerrno>

#include <spdlog/spdlog.h>

namespace turnrl::envs::server {
namespace {

// How long a request that is safe to repeat waits for its reply before it is sent again.
constexpr std::chrono::milliseconds kResendAfter{1000};

/** Requests that change nothing on the server, so a second copy does no harm. The server keeps
 *  no record of the ids it answered, so a step, create, reset or close sent twice runs twice. */
bool safe_to_repeat(const RequestBody& body) {
  return std::holds_alternative<HelloRequest>(body) || std::holds_alternative<PingRequest>(body) ||
         std::holds_alternative<RenderRequest>(body) || std::holds_alternative<StateRequest>(body) ||
         std::holds_alternative<GoldenScriptRequest>(body);
}

}  // namespace

EnvClient::EnvClient(std::string endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout), context_(1), socket_(context_, zmq::socket_type::dealer) {
  socket_.set(zmq::sockopt::linger, 0);
  try {
    socket_.connect(endpoint_);
  } catch (const zmq::error_t& e) {
    throw ServerUnreachable("env server " + endpoint_ + ": cannot connect: " + e.what());
  }
  const nlohmann::json hello = call(HelloRequest{{kProtocolVersion}});
  try {
    version_ = hello.at("version").get<int>();
    num_slots_ = hello.at("slots").get<int>();
  } catch (const nlohmann::json::exception& e) {
    throw ServerError("env server " + endpoint_ + ": malformed hello reply: " + e.what());
  }
}

void EnvClient::ping() { call(PingRequest{}); }

void EnvClient::disconnect(const std::string& reason) {
  const std::lock_guard lock(mutex_);
  socket_.close();
  disconnected_because_ = reason;
}

std::vector<SlotInfo> EnvClient::create(std::vector<CreateItem> items) {
  return decode_slot_infos(call(CreateRequest{std::move(items)}));
}

std::vector<EpisodeStart> EnvClient::reset(std::vector<ResetItem> items) {
  return decode_episode_starts(call(ResetRequest{std::move(items)}));
}

std::vector<StepOutcome> EnvClient::step(std::vector<StepItem> items) {
  return decode_step_outcomes(call(StepRequest{std::move(items)}));
}

void EnvClient::close(std::vector<int> slots) { call(CloseRequest{std::move(slots)}); }

std::string EnvClient::render(int slot) {
  const nlohmann::json reply = call(RenderRequest{slot});
  if (!reply.contains("text") || !reply["text"].is_string()) throw ServerError("malformed render reply");
  return reply["text"].get<std::string>();
}

std::string EnvClient::state(int slot) {
  const nlohmann::json reply = call(StateRequest{slot});
  if (!reply.contains("state") || !reply["state"].is_string() || reply["state"].get_ref<const std::string&>().size() % 2) {
    throw ServerError("malformed state reply");
  }
  const std::string& hex = reply["state"].get_ref<const std::string&>();
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw ServerError("malformed state reply: not lower-case hex");
  };
  std::string bytes(hex.size() / 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]));
  return bytes;
}

EnvApiScript EnvClient::golden_script(std::vector<nlohmann::json> records) {
  return decode_script(call(GoldenScriptRequest{std::move(records)}));
}

nlohmann::json EnvClient::call(RequestBody body) {
  using Clock = std::chrono::steady_clock;
  const std::lock_guard lock(mutex_);
  if (socket_.handle() == nullptr) throw ServerUnreachable("given up on after: " + disconnected_because_);
  const uint64_t id = ++next_id_;
  const std::string type(reply_type(body));
  const std::string name(request_type(body));
  const bool repeatable = safe_to_repeat(body);
  const std::string failure = "env server " + endpoint_ + ": no reply to '" + name + "' within " +
                              std::to_string(timeout_.count()) + " ms (is it running?)";
  const std::string payload = encode_request({id, std::move(body)});
  const Clock::time_point deadline = Clock::now() + timeout_;
  Clock::time_point resend = Clock::now();
  for (int attempt = 0;;) {
    const Clock::time_point now = Clock::now();
    if (now >= deadline) throw ServerUnreachable(failure);
    if (now >= resend) {
      // A request lost with a killed server is never answered, though the socket reconnects by
      // itself to one restarted on the endpoint: a repeatable one is sent again on the same socket
      // (a fresh socket would be a new client to the server, which keys slots by routing id).
      // Every copy has the same id, so the first reply to any of them answers it.
      if (attempt++ > 0) spdlog::debug("env server {}: no reply to '{}' yet, sending it again", endpoint_, name);
      if (!socket_.send(zmq::buffer(payload), zmq::send_flags::dontwait)) throw ServerUnreachable(failure);
      resend = repeatable ? now + kResendAfter : deadline;
    }
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(std::min(deadline, resend) - now);
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    try {
      zmq::poll(&item, 1, wait);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      throw ServerUnreachable("env server " + endpoint_ + ": " + e.what());
    }
    zmq::message_t message;
    if (!(item.revents & ZMQ_POLLIN) || !socket_.recv(message, zmq::recv_flags::dontwait)) continue;
    if (auto reply = decode_reply(message.to_string_view(), type, id)) return std::move(*reply);
  }
}

}  // namespace turnrl::envs::server
