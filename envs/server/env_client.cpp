#include "envs/server/env_client.h"

#include <cerrno>

namespace turnrl::envs::server {

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
  const std::string failure = "env server " + endpoint_ + ": no reply to '" + std::string(request_type(body)) +
                              "' within " + std::to_string(timeout_.count()) + " ms (is it running?)";
  const std::string payload = encode_request({id, std::move(body)});
  const Clock::time_point deadline = Clock::now() + timeout_;
  if (!socket_.send(zmq::buffer(payload), zmq::send_flags::dontwait)) throw ServerUnreachable(failure);
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) throw ServerUnreachable(failure);
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    try {
      zmq::poll(&item, 1, left);
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
