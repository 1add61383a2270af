#include "tools/serve/chat_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "agents/model/generation_engine.h"
#include "tools/serve/api_error.h"
#include "tools/serve/chat_request.h"
#include "tools/serve/http_server.h"

namespace turnrl::serve {
namespace {

using nlohmann::json;

constexpr uint64_t kChoiceSeedStride = 0x9E3779B97F4A7C15ULL;
constexpr int kCacheLogSeconds = 10;

std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

HttpReply json_reply(unsigned status, const json& body) { return {status, dump(body)}; }

HttpReply error_reply(unsigned status, const std::string& message) { return json_reply(status, error_body(status, message)); }

std::string sse_data(const json& data) { return "data: " + dump(data) + "\n\n"; }

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string error_text(const agents::GenerationResult& result) {
  try {
    std::rethrow_exception(result.error);
  } catch (const std::exception& error) {
    return error.what();
  } catch (...) {
    return "unknown error";
  }
}

/** A completion in flight: its choices' results and where the response goes. */
struct Completion {
  Completion(HttpResponder responder, ChatRequest request) : responder(std::move(responder)), request(std::move(request)) {}
  HttpResponder responder;
  ChatRequest request;
  std::string id;
  int64_t created = unix_time();  // one timestamp for every chunk, as OpenAI sends
  size_t prompt_tokens = 0;
  std::vector<agents::GenerationResult> results;
  int remaining = 0;
};

/** The engine's figures as GET /stats answers them. */
json stats_json(const agents::BatcherStats& stats) {
  const agents::PrefixCacheStats& cache = stats.prefix_cache;
  return {{"prefill_seconds", stats.prefill_seconds},
          {"decode_seconds", stats.decode_seconds},
          {"prefilled_tokens", stats.prefilled_tokens},
          {"prefix_cache",
           {{"lookups", cache.lookups},
            {"hits", cache.hits},
            {"prompt_tokens", cache.prompt_tokens},
            {"reused_tokens", cache.reused_tokens},
            {"evicted_tokens", cache.evicted_tokens},
            {"cached_tokens", cache.cached_tokens},
            {"bytes", cache.bytes},
            {"capacity_bytes", cache.capacity_bytes}}}};
}

}  // namespace

struct ChatServer::Impl {
  Impl(std::shared_ptr<agents::LanguageModel> model, ChatServerOptions options)
      : options(std::move(options)),
        model(model),
        http(http_options(this->options), [this](const HttpRequest& request, const HttpResponder& responder) { answer(request, responder); }),
        engine(model, this->options.max_batch, this->options.prefix_cache_mb << 20) {
    if (!model->has_tokenizer()) throw std::invalid_argument("serve: the model folder has no tokenizer.json");
  }

  static HttpServerOptions http_options(const ChatServerOptions& options) {
    HttpServerOptions http;
    http.host = options.host;
    http.port = options.port;
    http.error_reply = error_reply;
    return http;
  }

  /** Any exception becomes an error reply: ApiError's status, std::invalid_argument 400, else 500. */
  void answer(const HttpRequest& request, const HttpResponder& responder) {
    try {
      route(request, responder);
    } catch (const ApiError& error) {
      responder.respond(error_reply(error.status, error.what()));
    } catch (const std::invalid_argument& error) {
      responder.respond(error_reply(400, error.what()));
    } catch (const std::exception& error) {
      responder.respond(error_reply(500, error.what()));
    }
  }

  void route(const HttpRequest& request, const HttpResponder& responder) {
    const std::string path = request.target.substr(0, request.target.find('?'));
    const std::string models = "/v1/models";
    if (path == models || path.starts_with(models + "/")) {
      if (request.method != "GET") throw ApiError(405, path + " takes GET");
      const json entry = {{"id", options.model_name}, {"object", "model"}, {"created", created}, {"owned_by", "turnrl"}};
      if (path == models) return responder.respond(json_reply(200, {{"object", "list"}, {"data", json::array({entry})}}));
      if (path.substr(models.size() + 1) != options.model_name) throw ApiError(404, "no model '" + path.substr(models.size() + 1) + "'");
      return responder.respond(json_reply(200, entry));
    }
    if (path == "/stats") {
      if (request.method != "GET") throw ApiError(405, path + " takes GET");
      return responder.respond(json_reply(200, stats_json(engine.stats())));
    }
    if (path != "/v1/chat/completions") {
      throw ApiError(404, "unknown path " + path + " (this server has /v1/models, /v1/chat/completions and /stats)");
    }
    if (request.method != "POST") throw ApiError(405, path + " takes POST");
    start_completion(std::make_shared<Completion>(responder, parse_chat_request(request.body, options.max_choices)));
  }

  void start_completion(const std::shared_ptr<Completion>& completion) {
    const ChatRequest& request = completion->request;
    const std::vector<int32_t> prompt = model->tokenizer().encode_chat(request.messages, true);
    const int64_t room = model->context_length() - static_cast<int64_t>(prompt.size());
    if (room < 1) {
      throw ApiError(400, "the prompt has " + std::to_string(prompt.size()) + " tokens; the model's context holds " +
                              std::to_string(model->context_length()) + " with the reply");
    }
    completion->id = "chatcmpl-" + std::to_string(++next_id);
    completion->prompt_tokens = prompt.size();
    completion->results.resize(static_cast<size_t>(request.n));
    completion->remaining = request.n;
    const uint64_t seed = request.seed.value_or(seeds());
    if (request.stream) {
      completion->responder.begin_stream("text/event-stream");
      for (int index = 0; index < request.n; ++index) {
        send_event(*completion, chunk(*completion, {{"index", index}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"finish_reason", nullptr}}));
      }
    }
    for (int index = 0; index < request.n; ++index) {
      agents::GenerationRequest generation;
      generation.prompt = prompt;
      generation.params.temperature = static_cast<float>(request.temperature);
      generation.params.greedy = request.temperature == 0.0;
      generation.params.top_p = static_cast<float>(request.top_p);
      generation.params.max_new_tokens = static_cast<int>(std::min<int64_t>(request.max_tokens.value_or(room), room));
      generation.params.seed = seed + static_cast<uint64_t>(index) * kChoiceSeedStride;
      generation.stop = request.stop;
      // The engine calls back on its own thread; the response is written on the loop.
      if (request.stream) {
        generation.on_text = [this, completion, index](const std::string& piece) {
          if (completion->responder.gone()) return false;  // the client left: stop generating for it
          http.post([this, completion, index, piece] {
            send_event(*completion, chunk(*completion, {{"index", index}, {"delta", {{"content", piece}}}, {"finish_reason", nullptr}}));
          });
          return true;
        };
      }
      generation.on_done = [this, completion, index](agents::GenerationResult&& result) {
        http.post([this, completion, index, result = std::move(result)]() mutable { finish_choice(*completion, index, std::move(result)); });
      };
      engine.submit(std::move(generation));
    }
  }

  static void send_event(const Completion& completion, const json& data) { completion.responder.send_chunk(sse_data(data)); }

  json chunk(const Completion& completion, json choice) const {
    json value = {{"id", completion.id}, {"object", "chat.completion.chunk"}, {"created", completion.created}, {"model", options.model_name},
                  {"choices", json::array({std::move(choice)})}};
    if (completion.request.include_usage) value["usage"] = nullptr;
    return value;
  }

  static json usage(const Completion& completion) {
    size_t generated = 0;
    for (const auto& result : completion.results) generated += result.generation.ids.size();
    return {{"prompt_tokens", completion.prompt_tokens}, {"completion_tokens", generated}, {"total_tokens", completion.prompt_tokens + generated}};
  }

  void finish_choice(Completion& completion, int index, agents::GenerationResult&& result) {
    const ChatRequest& request = completion.request;
    if (result.error) spdlog::error("serve: {} choice {}: {}", completion.id, index, error_text(result));
    if (request.stream) {
      if (result.error) {
        send_event(completion, error_body(500, error_text(result)));
      } else {
        send_event(completion, chunk(completion, {{"index", index}, {"delta", json::object()}, {"finish_reason", result.finish_reason}}));
      }
    }
    completion.results[static_cast<size_t>(index)] = std::move(result);
    if (--completion.remaining > 0) return;
    log_prefix_cache();
    if (request.stream) {
      if (request.include_usage) {
        json last = chunk(completion, nullptr);
        last["choices"] = json::array();
        last["usage"] = usage(completion);
        send_event(completion, last);
      }
      completion.responder.send_chunk("data: [DONE]\n\n");
      return completion.responder.end_stream();
    }
    json choices = json::array();
    for (size_t i = 0; i < completion.results.size(); ++i) {
      const agents::GenerationResult& choice = completion.results[i];
      if (choice.error) return completion.responder.respond(error_reply(500, error_text(choice)));
      choices.push_back({{"index", i},
                         {"message", {{"role", "assistant"}, {"content", choice.text}}},
                         {"logprobs", nullptr},
                         {"finish_reason", choice.finish_reason}});
    }
    completion.responder.respond(json_reply(200, {{"id", completion.id},
                                                  {"object", "chat.completion"},
                                                  {"created", completion.created},
                                                  {"model", options.model_name},
                                                  {"choices", std::move(choices)},
                                                  {"usage", usage(completion)}}));
  }

  /** Every kCacheLogSeconds at most, after a completion: what the prefix cache saved so far. */
  void log_prefix_cache() {
    if (options.prefix_cache_mb == 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_cache_log < std::chrono::seconds(kCacheLogSeconds)) return;
    last_cache_log = now;
    const agents::PrefixCacheStats cache = engine.stats().prefix_cache;
    spdlog::info("serve: prefix cache hit {} of {} prompts ({:.0f}%), prefill tokens saved {} of {} ({:.0f}%), {:.1f} of {} MiB, {} tokens evicted",
                 cache.hits, cache.lookups, 100.0 * cache.hit_rate(), cache.reused_tokens, cache.prompt_tokens, 100.0 * cache.reused_share(),
                 static_cast<double>(cache.bytes) / (1 << 20), cache.capacity_bytes >> 20, cache.evicted_tokens);
  }

  ChatServerOptions options;
  std::chrono::steady_clock::time_point last_cache_log = std::chrono::steady_clock::now();
  std::shared_ptr<agents::LanguageModel> model;
  int64_t created = unix_time();
  std::atomic<uint64_t> next_id{0};
  std::mt19937_64 seeds{std::random_device{}()};  // requests without a seed (the loop's thread only)
  HttpServer http;
  // Last: destroyed first, so no generation callback posts to a destroyed loop.
  agents::GenerationEngine engine;
};

ChatServer::ChatServer(std::shared_ptr<agents::LanguageModel> model, ChatServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(model), std::move(options))) {}
ChatServer::~ChatServer() = default;

unsigned short ChatServer::port() const { return impl_->http.port(); }
std::string ChatServer::base_url() const { return "http://" + impl_->options.host + ":" + std::to_string(port()) + "/v1"; }
void ChatServer::run(bool handle_signals) { impl_->http.run(handle_signals); }
void ChatServer::stop() { impl_->http.stop(); }
agents::BatcherStats ChatServer::stats() { return impl_->engine.stats(); }

BackgroundChatServer::BackgroundChatServer(std::shared_ptr<agents::LanguageModel> model, ChatServerOptions options)
    : server_(std::move(model), std::move(options)), thread_([this] { server_.run(); }) {}

BackgroundChatServer::~BackgroundChatServer() {
  server_.stop();
  thread_.join();
}

}  // namespace turnrl::serve
