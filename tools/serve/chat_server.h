#pragma once
// `turnrl serve`: an OpenAI-compatible chat server (GET /v1/models, POST /v1/chat/completions with
// n choices and server-sent-event streaming) on the HTTP server loop (http_server.h), generating on
// the continuous-batching engine, which reuses the keys and values of prompt prefixes it has seen
// (GET /stats counts what that saved). A bad request gets 400 with an OpenAI-style JSON error.
#include <memory>
#include <string>
#include <thread>

#include "agents/model/continuous_batcher.h"
#include "agents/model/language_model.h"

namespace turnrl::serve {

struct ChatServerOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 8000;  // 0: a free port (see ChatServer::port)
  std::string model_name;      // the id /v1/models lists (any "model" in a request is accepted)
  int max_batch = 64;          // sequences the engine decodes together
  int max_choices = 16;        // largest n
  uint64_t prefix_cache_mb = 1024;  // keys and values of prompt prefixes kept for reuse; 0: none
};


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
  /** Thread-safe: where the engine's time went, what the prefix cache saved (GET /stats). */
  agents::BatcherStats stats();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/** A ChatServer serving on a thread of its own until destroyed, then stopped and joined (benchmarks
 *  that play against it in process). */
class BackgroundChatServer {
 public:
  BackgroundChatServer(std::shared_ptr<agents::LanguageModel> model, ChatServerOptions options);
  ~BackgroundChatServer();
  ChatServer& server() { return server_; }

 private:
  ChatServer server_;
  std::thread thread_;
};

}  // namespace turnrl::serve
