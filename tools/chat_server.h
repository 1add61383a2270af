#pragma once
// `turnrl serve`: an OpenAI-compatible chat server (GET /v1/models, POST /v1/chat/completions with
// n choices and server-sent-event streaming) over Boost.Beast on one I/O thread, generating on the
// continuous-batching engine. Keep-alive connections; a bad request gets 400 with a JSON error.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agents/model/language_model.h"
#include "memory/chat_message.h"

namespace turnrl::tools {

struct ChatServerOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 8000;  // 0: a free port (see ChatServer::port)
  std::string model_name;      // the id /v1/models lists (any "model" in a request is accepted)
  int max_batch = 64;          // sequences the engine decodes together
  int max_choices = 16;        // largest n
};

/** A validated /v1/chat/completions body. Unknown fields are ignored. */
struct ChatRequest {
  std::vector<memory::ChatMessage> messages;
  std::optional<int> max_tokens;  // max_completion_tokens or max_tokens; absent: the rest of the context
  double temperature = 1.0;       // 0: greedy
  double top_p = 1.0;
  std::optional<uint64_t> seed;   // choice i samples from seed + i * 0x9E3779B97F4A7C15
  std::vector<std::string> stop;
  int n = 1;
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
};

/** Throws std::invalid_argument with the message a 400 reply carries (naming the field). */
ChatRequest parse_chat_request(const nlohmann::json& body, int max_choices);

class ChatServer {
 public:
  /** Binds host:port and starts the engine; throws std::runtime_error when the address is taken. */
  ChatServer(std::shared_ptr<agents::LanguageModel> model, ChatServerOptions options);
  ~ChatServer();
  ChatServer(const ChatServer&) = delete;
  ChatServer& operator=(const ChatServer&) = delete;

  unsigned short port() const;
  /** http://HOST:PORT/v1 */
  std::string base_url() const;
  /** Serves on the calling thread until stop() (or SIGINT/SIGTERM when `handle_signals`). */
  void run(bool handle_signals = false);
  /** Thread-safe. */
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace turnrl::tools
