#include "envs/server/env_server.h"

#include <cerrno>
#include <iterator>
#include <stdexcept>
#include <type_traits>

#include <spdlog/spdlog.h>
#include <zmq_addon.hpp>

#include "envs/golden.h"
#include "envs/registry.h"

namespace turnrl::envs::server {
namespace {

// Golden files are the largest messages (a few MB); anything far beyond is a mistake.
constexpr int64_t kMaxMessageBytes = 64 << 20;
constexpr int kMaxSlots = 1 << 16;
// Requests handled per wake-up before the stop flag and silent clients are checked again.
constexpr int kMaxRequestsPerWake = 64;

int checked_slots(int slots) {
  if (slots < 1 || slots > kMaxSlots) {
    throw std::invalid_argument("env server: the slot count must be in [1, " + std::to_string(kMaxSlots) + "], got " +
                                std::to_string(slots));
  }
  return slots;
}

/** Routing ids are binary; logs show them in hex. */
std::string printable(const std::string& client) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : client) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace

EnvServer::EnvServer(EnvServerOptions options)
    : options_(std::move(options)),
      context_(1),
      socket_(context_, zmq::socket_type::router),
      slots_(checked_slots(options_.slots)) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.set(zmq::sockopt::maxmsgsize, kMaxMessageBytes);
  try {
    socket_.bind(options_.bind);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("env server: cannot bind " + options_.bind + ": " + e.what());
  }
  endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
}

void EnvServer::run(const std::atomic<bool>& stop) {
  std::vector<zmq::message_t> frames;
  while (!stop.load()) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    try {
      zmq::poll(&item, 1, kStopCheck);
      drop_silent_clients();
      for (int handled = 0; handled < kMaxRequestsPerWake; ++handled) {
        frames.clear();
        if (!zmq::recv_multipart(socket_, std::back_inserter(frames), zmq::recv_flags::dontwait)) break;
        // [routing id][REQ's empty delimiter, if any][payload]: the reply reuses the envelope.
        if (frames.size() < 2) continue;
        const std::string reply = handle(frames.front().to_string(), frames.back().to_string_view());
        frames.back().rebuild(reply.data(), reply.size());
        if (!zmq::send_multipart(socket_, frames, zmq::send_flags::dontwait)) {
          spdlog::warn("env server: a reply to client {} was dropped (its queue is full)", printable(frames.front().to_string()));
        }
      }
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;  // a signal: the loop re-checks `stop`
    }
  }
  spdlog::info("env server: stopped");
}

std::string EnvServer::handle(const std::string& client, std::string_view payload) {
  last_seen_[client] = Clock::now();
  std::optional<uint64_t> id;  // set once the request decoded
  try {
    const Request request = decode_request(payload, options_.slots);
    id = request.id;
    return std::visit(
        [&](const auto& r) {
          auto body = serve(client, r);
          if constexpr (std::is_same_v<decltype(body), std::vector<EpisodeStart>>) {
            return encode_reset_reply(request.id, body);
          } else if constexpr (std::is_same_v<decltype(body), std::vector<StepOutcome>>) {
            return encode_step_reply(request.id, body);
          } else {
            return encode_reply(reply_type(request.body), request.id, std::move(body));
          }
        },
        request.body);
  } catch (const std::exception& e) {
    spdlog::debug("env server: error reply to client {}: {}", printable(client), e.what());
    return encode_error(id ? *id : request_id_of(payload), e.what());
  }
}

nlohmann::json EnvServer::serve(const std::string&, const HelloRequest& request) {
  int chosen = 0;
  for (int version : request.versions) {
    if (version == kProtocolVersion) chosen = version;
  }
  if (chosen == 0) {
    throw ProtocolError("no common protocol version: the client speaks " + nlohmann::json(request.versions).dump() +
                        ", this server speaks [" + std::to_string(kProtocolVersion) + "]");
  }
  return {{"version", chosen}, {"slots", options_.slots}, {"server", "turnrl env-server"}};
}

nlohmann::json EnvServer::serve(const std::string&, const PingRequest&) { return nlohmann::json::object(); }

nlohmann::json EnvServer::serve(const std::string& client, const CreateRequest& request) {
  // Everything is checked and every env built before any slot changes.
  std::vector<bool> taken(slots_.size(), false);
  std::vector<int> targets;
  for (const CreateItem& item : request.items) {
    if (!item.slot) continue;
    const Slot& slot = slots_[*item.slot];
    if (!slot.owner.empty() && slot.owner != client) {
      throw ProtocolError("slot " + std::to_string(*item.slot) + " belongs to another client");
    }
    taken[*item.slot] = true;
  }
  size_t next_free = 0;
  for (const CreateItem& item : request.items) {
    if (item.slot) {
      targets.push_back(*item.slot);
      continue;
    }
    while (next_free < slots_.size() && (taken[next_free] || !slots_[next_free].owner.empty())) ++next_free;
    if (next_free == slots_.size()) {
      throw ProtocolError("no free slot for " + item.env_id + " (all " + std::to_string(slots_.size()) + " are in use)");
    }
    taken[next_free] = true;
    targets.push_back(static_cast<int>(next_free));
  }
  std::vector<std::unique_ptr<Env>> envs;
  for (const CreateItem& item : request.items) envs.push_back(make_env(item.env_id, item.options));

  nlohmann::json results = nlohmann::json::array();
  for (size_t i = 0; i < envs.size(); ++i) {
    Slot& slot = slots_[targets[i]];
    slot = Slot{client, std::move(envs[i]), false};
    results.push_back(slot_info_json(targets[i], *slot.env));
  }
  return {{"results", std::move(results)}};
}

std::vector<EpisodeStart> EnvServer::serve(const std::string& client, const ResetRequest& request) {
  for (const ResetItem& item : request.items) owned_slot(client, item.slot, false);
  std::vector<EpisodeStart> results;
  results.reserve(request.items.size());
  for (const ResetItem& item : request.items) {
    Slot& slot = slots_[item.slot];
    slot.env->reset(item.seed);
    slot.has_reset = true;
    results.push_back(episode_start(item.slot, *slot.env));
  }
  return results;
}

std::vector<StepOutcome> EnvServer::serve(const std::string& client, const StepRequest& request) {
  for (const StepItem& item : request.items) {
    const Slot& slot = owned_slot(client, item.slot, true);
    if (item.action >= slot.env->num_actions()) {
      throw ProtocolError("slot " + std::to_string(item.slot) + ": action " + std::to_string(item.action) +
                          " is out of range [0, " + std::to_string(slot.env->num_actions()) + ")");
    }
  }
  std::vector<StepOutcome> results;
  results.reserve(request.items.size());
  for (const StepItem& item : request.items) {
    Env& env = *slots_[item.slot].env;
    results.push_back(step_outcome(item.slot, env, env.step(item.action)));
  }
  return results;
}

nlohmann::json EnvServer::serve(const std::string& client, const CloseRequest& request) {
  for (int slot : request.slots) owned_slot(client, slot, false);
  for (int slot : request.slots) slots_[slot] = Slot{};
  return {{"slots", request.slots}};
}

nlohmann::json EnvServer::serve(const std::string& client, const RenderRequest& request) {
  return {{"slot", request.slot}, {"text", owned_slot(client, request.slot, true).env->render_ascii()}};
}

nlohmann::json EnvServer::serve(const std::string& client, const StateRequest& request) {
  const std::string state = owned_slot(client, request.slot, true).env->serialize_state();
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * state.size());
  for (unsigned char byte : state) {
    hex.push_back(kHex[byte >> 4]);
    hex.push_back(kHex[byte & 15]);
  }
  return {{"slot", request.slot}, {"state", std::move(hex)}};
}

nlohmann::json EnvServer::serve(const std::string&, const GoldenScriptRequest& request) {
  return script_json(env_api_script(request.records));
}

EnvServer::Slot& EnvServer::owned_slot(const std::string& client, int index, bool need_reset) {
  Slot& slot = slots_[index];
  const std::string name = "slot " + std::to_string(index);
  if (slot.owner.empty()) throw ProtocolError(name + " holds no env (create one first)");
  if (slot.owner != client) throw ProtocolError(name + " belongs to another client");
  if (need_reset && !slot.has_reset) throw ProtocolError(name + " has not been reset");
  return slot;
}

void EnvServer::drop_silent_clients() {
  const Clock::time_point now = Clock::now();
  for (auto it = last_seen_.begin(); it != last_seen_.end();) {
    if (now - it->second < options_.client_timeout) {
      ++it;
      continue;
    }
    int dropped = 0;
    for (Slot& slot : slots_) {
      if (slot.owner != it->first) continue;
      slot = Slot{};
      ++dropped;
    }
    if (dropped > 0) {
      spdlog::info("env server: client {} silent for over {} ms; its {} slot(s) are free again", printable(it->first),
                   options_.client_timeout.count(), dropped);
    }
    it = last_seen_.erase(it);
  }
}

}  // namespace turnrl::envs::server
