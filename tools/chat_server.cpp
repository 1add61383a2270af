#include "tools/chat_server.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <deque>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>

#include <boost/asio/signal_set.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "agents/model/generation_engine.h"

namespace turnrl::tools {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;

constexpr size_t kBodyLimit = 16 << 20;
constexpr auto kIdleTimeout = std::chrono::seconds(120);   // a keep-alive connection without a request
constexpr auto kWriteTimeout = std::chrono::seconds(60);   // a client that stops reading
constexpr uint64_t kChoiceSeedStride = 0x9E3779B97F4A7C15ULL;

/** An HTTP error reply: status and the message of OpenAI's error object. */
struct HttpError : std::runtime_error {
  HttpError(unsigned status, const std::string& message) : std::runtime_error(message), status(status) {}
  unsigned status;
};

json error_body(const std::string& message, unsigned status) {
  const char* type = status == 404 ? "not_found_error" : status < 500 ? "invalid_request_error" : "server_error";
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}};
}

std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

/** A whole HTTP/1.1 response, serialised. */
std::string http_response(unsigned status, const std::string& body, bool keep_alive) {
  http::response<http::string_body> response{static_cast<http::status>(status), 11};
  response.set(http::field::server, "turnrl");
  response.set(http::field::content_type, "application/json");
  response.keep_alive(keep_alive);
  response.body() = body;
  response.prepare_payload();
  std::ostringstream out;
  out << response;
  return out.str();
}

/** One chunk of a chunked body (the empty chunk ends the body). */
std::string http_chunk(const std::string& data) {
  std::ostringstream out;
  out << std::hex << data.size() << "\r\n" << data << "\r\n";
  return out.str();
}

std::string sse_event(const json& data) { return http_chunk("data: " + dump(data) + "\n\n"); }

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string message_content(const json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw std::invalid_argument(where + ".content must be a string or an array of text parts");
  std::string text;
  for (const json& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string()) {
      throw std::invalid_argument(where + ".content parts must be {\"type\": \"text\", \"text\": string} (only text is supported)");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

/** The field when present and not null. */
const json* field(const json& body, const char* name) {
  const auto found = body.find(name);
  return found == body.end() || found->is_null() ? nullptr : &*found;
}

}  // namespace

ChatRequest parse_chat_request(const json& body, int max_choices) {
  if (!body.is_object()) throw std::invalid_argument("the request body must be a JSON object");
  ChatRequest request;
  const json* messages = field(body, "messages");
  if (!messages) throw std::invalid_argument("'messages' is required");
  if (!messages->is_array() || messages->empty()) throw std::invalid_argument("'messages' must be a non-empty array");
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& message = (*messages)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!message.is_object()) throw std::invalid_argument(where + " must be an object");
    const json* role = field(message, "role");
    if (!role || !role->is_string()) throw std::invalid_argument(where + ".role must be a string");
    std::string name = role->get<std::string>();
    if (name == "developer") name = "system";  // newer clients' name for the system message
    if (name != "system" && name != "user" && name != "assistant") {
      throw std::invalid_argument(where + ".role must be system, developer, user or assistant (got '" + name + "')");
    }
    const json* content = field(message, "content");
    if (!content) throw std::invalid_argument(where + ".content is required");
    request.messages.push_back({name, message_content(*content, where)});
  }
  auto integer = [&](const char* name, int64_t low, int64_t high) -> std::optional<int64_t> {
    const json* value = field(body, name);
    if (!value) return std::nullopt;
    if (!value->is_number_integer()) throw std::invalid_argument(std::string("'") + name + "' must be an integer");
    const bool beyond_int64 = value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(high);
    if (beyond_int64 || value->get<int64_t>() < low || value->get<int64_t>() > high) {
      throw std::invalid_argument(std::string("'") + name + "' must be between " + std::to_string(low) + " and " + std::to_string(high));
    }
    return value->get<int64_t>();
  };
  auto number = [&](const char* name, double low, double high, bool low_open) -> std::optional<double> {
    const json* value = field(body, name);
    if (!value) return std::nullopt;
    if (!value->is_number()) throw std::invalid_argument(std::string("'") + name + "' must be a number");
    const double x = value->get<double>();
    if (x > high || x < low || (low_open && x == low)) {
      throw std::invalid_argument(std::string("'") + name + "' must be in " + (low_open ? "(" : "[") + std::to_string(low) + ", " +
                                  std::to_string(high) + "]");
    }
    return x;
  };
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {  // the newer name wins
    if (const auto limit = integer(name, 1, std::numeric_limits<int>::max())) request.max_tokens = static_cast<int>(*limit);
  }
  request.temperature = number("temperature", 0.0, 2.0, false).value_or(1.0);
  request.top_p = number("top_p", 0.0, 1.0, true).value_or(1.0);
  request.n = static_cast<int>(integer("n", 1, max_choices).value_or(1));
  if (const json* seed = field(body, "seed")) {
    if (!seed->is_number_integer()) throw std::invalid_argument("'seed' must be an integer");
    request.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }
  if (const json* stop = field(body, "stop")) {
    if (stop->is_string()) {
      request.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const json& each : *stop) {
        if (!each.is_string()) throw std::invalid_argument("'stop' must be a string or an array of strings");
        request.stop.push_back(each.get<std::string>());
      }
    } else {
      throw std::invalid_argument("'stop' must be a string or an array of strings");
    }
    for (const std::string& each : request.stop) {
      if (each.empty()) throw std::invalid_argument("'stop' strings must not be empty");
    }
  }
  if (const json* stream = field(body, "stream")) {
    if (!stream->is_boolean()) throw std::invalid_argument("'stream' must be a boolean");
    request.stream = stream->get<bool>();
  }
  if (const json* options = field(body, "stream_options")) {
    if (!options->is_object()) throw std::invalid_argument("'stream_options' must be an object");
    if (const json* usage = field(*options, "include_usage")) {
      if (!usage->is_boolean()) throw std::invalid_argument("'stream_options.include_usage' must be a boolean");
      request.include_usage = usage->get<bool>();
    }
  }
  if (const json* model = field(body, "model"); model && !model->is_string()) throw std::invalid_argument("'model' must be a string");
  return request;
}

struct ChatServer::Impl {
  class Session;

  Impl(std::shared_ptr<agents::LanguageModel> model, ChatServerOptions options)
      : options(std::move(options)), acceptor(io), model(model), engine(model, this->options.max_batch) {
    if (!model->has_tokenizer()) throw std::invalid_argument("serve: the model folder has no tokenizer.json");
    boost::system::error_code error;
    const tcp::endpoint endpoint(asio::ip::make_address(this->options.host, error), this->options.port);
    if (error) throw std::invalid_argument("serve: '" + this->options.host + "' is not an IP address");
    acceptor.open(endpoint.protocol());
    acceptor.set_option(asio::socket_base::reuse_address(true));
    acceptor.bind(endpoint, error);
    if (error) throw std::runtime_error("serve: cannot bind " + this->options.host + ":" + std::to_string(this->options.port) + ": " + error.message());
    acceptor.listen();
  }

  void accept();

  asio::io_context io;
  ChatServerOptions options;
  tcp::acceptor acceptor;
  std::shared_ptr<agents::LanguageModel> model;
  int64_t created = unix_time();
  std::atomic<uint64_t> next_id{0};
  std::mt19937_64 seeds{std::random_device{}()};  // requests without a seed (I/O thread only)
  // Last: destroyed first, so no generation callback posts to a destroyed io_context.
  agents::GenerationEngine engine;
};

/** One connection: reads a request, answers it (whole, or as an event stream), then the next. */
class ChatServer::Impl::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Impl& server, tcp::socket socket) : server_(server), stream_(std::move(socket)) {}

  void read() {
    parser_.emplace();
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code error, size_t) { self->on_read(error); });
  }

 private:
  /** A completion in flight: its choices' results and the response state. */
  struct Completion {
    std::string id;
    int64_t created = unix_time();  // one timestamp for every chunk, as OpenAI sends
    ChatRequest request;
    size_t prompt_tokens = 0;
    std::vector<agents::GenerationResult> results;
    int remaining = 0;
  };

  void on_read(beast::error_code error) {
    if (error == http::error::body_limit) {
      keep_alive_ = false;
      respond(413, dump(error_body("the request body is larger than " + std::to_string(kBodyLimit) + " bytes", 413)));
      return;
    }
    if (error) return close();  // the client went away, sent garbage or idled out
    stream_.expires_never();
    const http::request<http::string_body> request = parser_->release();
    keep_alive_ = request.keep_alive();
    try {
      handle(request);
    } catch (const HttpError& error) {
      respond(error.status, dump(error_body(error.what(), error.status)));
    } catch (const std::invalid_argument& error) {
      respond(400, dump(error_body(error.what(), 400)));
    } catch (const std::exception& error) {
      respond(500, dump(error_body(error.what(), 500)));
    }
  }

  void handle(const http::request<http::string_body>& request) {
    const std::string target(request.target());
    const std::string path = target.substr(0, target.find('?'));
    const std::string models = "/v1/models";
    if (path == models || path.starts_with(models + "/")) {
      if (request.method() != http::verb::get) throw HttpError(405, path + " takes GET");
      const json entry = {{"id", server_.options.model_name}, {"object", "model"}, {"created", server_.created}, {"owned_by", "turnrl"}};
      if (path == models) return respond(200, dump({{"object", "list"}, {"data", json::array({entry})}}));
      if (path.substr(models.size() + 1) != server_.options.model_name) throw HttpError(404, "no model '" + path.substr(models.size() + 1) + "'");
      return respond(200, dump(entry));
    }
    if (path != "/v1/chat/completions") throw HttpError(404, "unknown path " + path + " (this server has /v1/models and /v1/chat/completions)");
    if (request.method() != http::verb::post) throw HttpError(405, path + " takes POST");
    const json body = json::parse(request.body(), nullptr, false);
    if (body.is_discarded()) throw std::invalid_argument("the request body is not valid JSON");
    start_completion(parse_chat_request(body, server_.options.max_choices));
  }

  void start_completion(ChatRequest chat) {
    agents::LanguageModel& model = *server_.model;
    const std::vector<int32_t> prompt = model.tokenizer().encode_chat(chat.messages, true);
    const int64_t room = model.context_length() - static_cast<int64_t>(prompt.size());
    if (room < 1) {
      throw std::invalid_argument("the prompt has " + std::to_string(prompt.size()) + " tokens; the model's context holds " +
                                  std::to_string(model.context_length()) + " with the reply");
    }
    auto completion = std::make_shared<Completion>();
    completion->id = "chatcmpl-" + std::to_string(++server_.next_id);
    completion->prompt_tokens = prompt.size();
    completion->results.resize(static_cast<size_t>(chat.n));
    completion->remaining = chat.n;
    completion->request = std::move(chat);
    const ChatRequest& request = completion->request;
    const uint64_t seed = request.seed.value_or(server_.seeds());
    if (request.stream) {
      send("HTTP/1.1 200 OK\r\nServer: turnrl\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
           "Transfer-Encoding: chunked\r\n" + std::string(keep_alive_ ? "" : "Connection: close\r\n") + "\r\n");
      for (int index = 0; index < request.n; ++index) {
        send(sse_event(chunk(*completion, {{"index", index}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"finish_reason", nullptr}})));
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
      auto self = shared_from_this();
      if (request.stream) {
        generation.on_text = [self, completion, index](const std::string& piece) {
          if (self->gone_) return false;  // the client left: stop generating for it
          asio::post(self->stream_.get_executor(), [self, completion, index, piece] {
            self->send(sse_event(self->chunk(*completion, {{"index", index}, {"delta", {{"content", piece}}}, {"finish_reason", nullptr}})));
          });
          return true;
        };
      }
      generation.on_done = [self, completion, index](agents::GenerationResult&& result) {
        asio::post(self->stream_.get_executor(), [self, completion, index, result = std::move(result)]() mutable {
          self->finish_choice(*completion, index, std::move(result));
        });
      };
      server_.engine.submit(std::move(generation));
    }
  }

  json chunk(const Completion& completion, json choice) const {
    json value = {{"id", completion.id}, {"object", "chat.completion.chunk"}, {"created", completion.created}, {"model", server_.options.model_name},
                  {"choices", json::array({std::move(choice)})}};
    if (completion.request.include_usage) value["usage"] = nullptr;
    return value;
  }

  json usage(const Completion& completion) const {
    size_t generated = 0;
    for (const auto& result : completion.results) generated += result.generation.ids.size();
    return {{"prompt_tokens", completion.prompt_tokens}, {"completion_tokens", generated}, {"total_tokens", completion.prompt_tokens + generated}};
  }

  static std::string error_text(const agents::GenerationResult& result) {
    try {
      std::rethrow_exception(result.error);
    } catch (const std::exception& error) {
      return error.what();
    } catch (...) {
      return "unknown error";
    }
  }

  void finish_choice(Completion& completion, int index, agents::GenerationResult&& result) {
    const ChatRequest& request = completion.request;
    if (result.error) spdlog::error("serve: {} choice {}: {}", completion.id, index, error_text(result));
    if (request.stream) {
      if (result.error) {
        send(sse_event(error_body(error_text(result), 500)));
      } else {
        send(sse_event(chunk(completion, {{"index", index}, {"delta", json::object()}, {"finish_reason", result.finish_reason}})));
      }
    }
    completion.results[static_cast<size_t>(index)] = std::move(result);
    if (--completion.remaining > 0) return;
    if (request.stream) {
      if (request.include_usage) {
        json last = chunk(completion, nullptr);
        last["choices"] = json::array();
        last["usage"] = usage(completion);
        send(sse_event(last));
      }
      send(http_chunk("data: [DONE]\n\n"));
      send(http_chunk(""));
      return end_response();
    }
    json choices = json::array();
    for (size_t i = 0; i < completion.results.size(); ++i) {
      const agents::GenerationResult& choice = completion.results[i];
      if (choice.error) return respond(500, dump(error_body(error_text(choice), 500)));
      choices.push_back({{"index", i},
                         {"message", {{"role", "assistant"}, {"content", choice.text}}},
                         {"logprobs", nullptr},
                         {"finish_reason", choice.finish_reason}});
    }
    respond(200, dump({{"id", completion.id},
                       {"object", "chat.completion"},
                       {"created", completion.created},
                       {"model", server_.options.model_name},
                       {"choices", std::move(choices)},
                       {"usage", usage(completion)}}));
  }

  void respond(unsigned status, const std::string& body) {
    send(http_response(status, body, keep_alive_));
    end_response();
  }

  /** After the response's last byte is written: the next request, or the end of the connection. */
  void end_response() {
    response_complete_ = true;
    if (!writing_) after_response();
  }

  void after_response() {
    response_complete_ = false;
    if (keep_alive_ && !gone_) return read();
    close();
  }

  void send(std::string bytes) {
    if (gone_) return;
    outbox_.push_back(std::move(bytes));
    if (!writing_) write_next();
  }

  void write_next() {
    writing_ = true;
    stream_.expires_after(kWriteTimeout);
    asio::async_write(stream_, asio::buffer(outbox_.front()), [self = shared_from_this()](beast::error_code error, size_t) {
      self->outbox_.pop_front();
      if (error) {
        self->outbox_.clear();
        self->writing_ = false;
        return self->close();
      }
      if (!self->outbox_.empty()) return self->write_next();
      self->writing_ = false;
      self->stream_.expires_never();
      if (self->response_complete_) self->after_response();
    });
  }

  void close() {
    gone_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<std::string> outbox_;
  bool writing_ = false, keep_alive_ = true, response_complete_ = false;
  std::atomic<bool> gone_{false};  // read by generation callbacks on the engine's thread
};

void ChatServer::Impl::accept() {
  acceptor.async_accept([this](beast::error_code error, tcp::socket socket) {
    if (error == asio::error::operation_aborted) return;
    if (!error) std::make_shared<Session>(*this, std::move(socket))->read();
    accept();
  });
}

ChatServer::ChatServer(std::shared_ptr<agents::LanguageModel> model, ChatServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(model), std::move(options))) {}
ChatServer::~ChatServer() = default;

unsigned short ChatServer::port() const { return impl_->acceptor.local_endpoint().port(); }
std::string ChatServer::base_url() const { return "http://" + impl_->options.host + ":" + std::to_string(port()) + "/v1"; }

void ChatServer::run(bool handle_signals) {
  asio::signal_set signals(impl_->io);
  if (handle_signals) {
    signals.add(SIGINT);
    signals.add(SIGTERM);
    signals.async_wait([this](beast::error_code error, int) {
      if (!error) stop();
    });
  }
  impl_->accept();
  impl_->io.run();
}

void ChatServer::stop() { impl_->io.stop(); }

}  // namespace turnrl::tools
