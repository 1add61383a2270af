#include "tools/serve/http_server.h"

#include <atomic>
#include <csignal>
#include <deque>
#include <sstream>
#include <stdexcept>

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace turnrl::serve {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

/** A whole HTTP/1.1 response, serialised. */
std::string http_response(const HttpReply& reply, bool keep_alive) {
  http::response<http::string_body> response{static_cast<http::status>(reply.status), 11};
  response.set(http::field::server, "turnrl");
  response.set(http::field::content_type, reply.content_type);
  for (const auto& [name, value] : reply.headers) response.set(name, value);
  response.keep_alive(keep_alive);
  response.body() = reply.body;
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

HttpReply plain_error(unsigned status, const std::string& message) { return {status, message, "text/plain"}; }

}  // namespace

struct HttpServer::Impl {
  Impl(HttpServerOptions options, Handler handler)
      : options(std::move(options)), handler(std::move(handler)), acceptor(io), idle_stop(io) {
    if (!this->options.error_reply) this->options.error_reply = plain_error;
    boost::system::error_code error;
    const tcp::endpoint endpoint(asio::ip::make_address(this->options.host, error), this->options.port);
    if (error) throw std::invalid_argument("'" + this->options.host + "' is not an IP address");
    acceptor.open(endpoint.protocol());
    acceptor.set_option(asio::socket_base::reuse_address(true));
    acceptor.bind(endpoint, error);
    if (error) throw std::runtime_error("cannot bind " + this->options.host + ":" + std::to_string(this->options.port) + ": " + error.message());
    acceptor.listen();
    arm_idle_stop();
  }

  void accept();

  /** (Re)starts the countdown of stop_when_idle. */
  void arm_idle_stop() {
    if (!options.stop_when_idle) return;
    idle_stop.expires_after(*options.stop_when_idle);
    idle_stop.async_wait([this](boost::system::error_code error) {
      if (!error) io.stop();
    });
  }

  asio::io_context io;
  HttpServerOptions options;
  Handler handler;
  tcp::acceptor acceptor;
  asio::steady_timer idle_stop;
  std::atomic<int> connections{0};
};

/** One connection: reads a request, answers it (whole, or as a chunked stream), then the next. */
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(HttpServer::Impl& server, tcp::socket socket) : server_(server), stream_(std::move(socket)) {}

  void read() {
    parser_.emplace();
    parser_->body_limit(server_.options.body_limit);
    stream_.expires_after(server_.options.idle_timeout);
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code error, size_t) { self->on_read(error); });
  }

  void respond(HttpReply reply) {
    hang_up_ = reply.hang_up;
    send(http_response(reply, keep_alive_));
    end_response();
  }

  void begin_stream(const std::string& content_type) {
    send("HTTP/1.1 200 OK\r\nServer: turnrl\r\nContent-Type: " + content_type + "\r\nCache-Control: no-cache\r\n"
         "Transfer-Encoding: chunked\r\n" + std::string(keep_alive_ ? "" : "Connection: close\r\n") + "\r\n");
  }

  void send_chunk(const std::string& data) { send(http_chunk(data)); }

  void end_stream() {
    send(http_chunk(""));
    end_response();
  }

  bool gone() const { return gone_; }

 private:
  void on_read(beast::error_code error) {
    if (error == http::error::body_limit) {
      keep_alive_ = false;
      return respond(server_.options.error_reply(413, "the request body is larger than " + std::to_string(server_.options.body_limit) + " bytes"));
    }
    if (error) return close();  // the client went away, sent garbage or idled out
    stream_.expires_never();
    http::request<http::string_body> request = parser_->release();
    keep_alive_ = request.keep_alive();
    hang_up_ = false;
    server_.arm_idle_stop();
    server_.handler({std::string(request.method_string()), std::string(request.target()), std::move(request.body())},
                    HttpResponder(shared_from_this()));
  }

  /** After the response's last byte is written: the next request, or the end of the connection. */
  void end_response() {
    response_complete_ = true;
    if (!writing_) after_response();
  }

  void after_response() {
    response_complete_ = false;
    if (keep_alive_ && !hang_up_ && !gone_) return read();
    close();
  }

  void send(std::string bytes) {
    if (gone_) return;
    outbox_.push_back(std::move(bytes));
    if (!writing_) write_next();
  }

  void write_next() {
    writing_ = true;
    stream_.expires_after(server_.options.write_timeout);
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

  HttpServer::Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<std::string> outbox_;
  bool writing_ = false, keep_alive_ = true, response_complete_ = false, hang_up_ = false;
  std::atomic<bool> gone_{false};  // read by other threads' callbacks (a generation in flight)
};

void HttpResponder::respond(HttpReply reply) const { connection_->respond(std::move(reply)); }
void HttpResponder::begin_stream(const std::string& content_type) const { connection_->begin_stream(content_type); }
void HttpResponder::send_chunk(const std::string& data) const { connection_->send_chunk(data); }
void HttpResponder::end_stream() const { connection_->end_stream(); }
bool HttpResponder::gone() const { return connection_->gone(); }

void HttpServer::Impl::accept() {
  acceptor.async_accept([this](beast::error_code error, tcp::socket socket) {
    if (error == asio::error::operation_aborted) return;
    if (!error) {
      ++connections;
      std::make_shared<HttpConnection>(*this, std::move(socket))->read();
    }
    accept();
  });
}

HttpServer::HttpServer(HttpServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}
HttpServer::~HttpServer() = default;

unsigned short HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }
const std::string& HttpServer::host() const { return impl_->options.host; }
int HttpServer::connections() const { return impl_->connections.load(); }

void HttpServer::run(bool handle_signals) {
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

void HttpServer::stop() { impl_->io.stop(); }

void HttpServer::post(std::function<void()> task, std::chrono::milliseconds delay) {
  if (delay <= std::chrono::milliseconds::zero()) return asio::post(impl_->io, std::move(task));
  auto timer = std::make_shared<asio::steady_timer>(impl_->io, delay);
  timer->async_wait([timer, task = std::move(task)](boost::system::error_code error) {
    if (!error) task();
  });
}

}  // namespace turnrl::serve
