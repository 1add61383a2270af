#pragma once
// The batched client of an env server: one call creates, resets or steps many slots in one message.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "envs/server/protocol.h"

namespace turnrl::envs::server {

/**
 * One connection to an env server (a DEALER socket), one request at a time: calls from several
 * threads are serialised (a heartbeat thread may ping while a rollout steps the slots).
 * Every call waits at most `timeout` for its reply and then throws ServerUnreachable, so a dead or
 * hung server is reported, never waited on forever; a late reply to a timed-out call is discarded.
 * Within that time, requests that change nothing on the server (hello, ping, render, state, golden
 * script) are sent again each second without a reply, so that one lost with a server killed and
 * restarted on the same endpoint is answered by the new one; creates, resets, steps and closes are
 * sent once (the server does not deduplicate requests).
 * Error replies throw ServerError, with the server's message.
 */
class EnvClient {
 public:
  /** Connects and negotiates the protocol version (hello); throws ServerError on failure. */
  explicit EnvClient(std::string endpoint, std::chrono::milliseconds timeout = std::chrono::seconds(10));

  const std::string& endpoint() const { return endpoint_; }
  int version() const { return version_; }
  int num_slots() const { return num_slots_; }

  /** Heartbeat: proves the server alive and keeps this client's slots from being dropped. */
  void ping();
  /** Closes the connection for good: every later call throws ServerUnreachable at once, naming
   *  `reason`, so that the users of a server given up on do not each wait out a timeout. The
   *  server frees the slots once this client falls silent. */
  void disconnect(const std::string& reason);
  std::vector<SlotInfo> create(std::vector<CreateItem> items);
  std::vector<EpisodeStart> reset(std::vector<ResetItem> items);
  std::vector<StepOutcome> step(std::vector<StepItem> items);
  void close(std::vector<int> slots);
  std::string render(int slot);
  /** The slot env's serialize_state() bytes. */
  std::string state(int slot);
  /** A golden file's records as Env API traffic, translated by the server (envs::env_api_script). */
  EnvApiScript golden_script(std::vector<nlohmann::json> records);

 private:
  /** Sends `body` and returns the reply's body. */
  nlohmann::json call(RequestBody body);

  std::string endpoint_;
  std::chrono::milliseconds timeout_;
  zmq::context_t context_;
  zmq::socket_t socket_;
  std::mutex mutex_;  // one request at a time on the socket
  std::string disconnected_because_;
  uint64_t next_id_ = 0;
  int version_ = 0;
  int num_slots_ = 0;
};

}  // namespace turnrl::envs::server
