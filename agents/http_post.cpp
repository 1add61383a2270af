#include "agents/http_post.h"

#include <chrono>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace turnrl::agents {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

/** An attempt that may succeed on retry (network trouble, 429, 5xx). */
struct TransientError : std::runtime_error {
  explicit TransientError(const std::string& what, std::optional<double> retry_after = std::nullopt)
      : std::runtime_error(what), retry_after(retry_after) {}
  std::optional<double> retry_after;  // seconds the server asked to wait
};

/** `text` as a number of seconds in [0, 60] (what a client may wait), scaled by `unit`. */
std::optional<double> wait_seconds(const std::string& text, double unit) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end) * unit;
  if (end != text.c_str() + text.size() || !(value >= 0 && value <= 60)) return std::nullopt;
  return value;
}

std::string attempt(const HttpUrl& url, const http::request<http::string_body>& request, std::chrono::milliseconds timeout) {
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code error;
  auto run = [&](const char* stage) {
    io.run();
    io.restart();
    if (error == beast::error::timeout) throw TransientError(std::string(stage) + " timed out");
    if (error) throw TransientError(std::string(stage) + ": " + error.message());
  };
  tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(url.host, url.port, error);
  if (error) throw TransientError("cannot resolve " + url.host + ": " + error.message());
  stream.expires_after(timeout);
  stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) { error = e; });
  run("connect");
  stream.expires_after(timeout);
  http::async_write(stream, request, [&](beast::error_code e, size_t) { error = e; });
  run("send");
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  stream.expires_after(timeout);
  http::async_read(stream, buffer, response, [&](beast::error_code e, size_t) { error = e; });
  run("receive");
  const unsigned status = response.result_int();
  if (status == 429 || status >= 500) {
    throw TransientError("HTTP " + std::to_string(status),
                         retry_after_seconds(std::string(response["retry-after-ms"]), std::string(response[http::field::retry_after])));
  }
  if (status != 200) throw std::runtime_error("HTTP " + std::to_string(status) + ": " + response.body().substr(0, 500));
  return std::move(response.body());
}

}  // namespace

HttpUrl HttpUrl::parse(const std::string& url, const std::string& what) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) throw std::invalid_argument(what + ": the URL must start with http:// (got '" + url + "')");
  HttpUrl out;
  out.text = url;
  const std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  out.path = slash == std::string::npos ? "/" : rest.substr(slash);
  const size_t colon = authority.rfind(':');
  out.host = authority.substr(0, colon);
  out.port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  if (out.host.empty() || out.port.empty() || out.port.find_first_not_of("0123456789") != std::string::npos) {
    throw std::invalid_argument(what + ": cannot parse host and port from '" + url + "'");
  }
  return out;
}

std::optional<double> retry_after_seconds(const std::string& retry_after_ms, const std::string& retry_after) {
  if (const auto ms = wait_seconds(retry_after_ms, 0.001)) return ms;
  return wait_seconds(retry_after, 1.0);
}

void HttpRetryPolicy::validate(const std::string& what) const {
  if (!(timeout_s > 0) || retries < 0 || !(backoff_s >= 0)) {
    throw std::invalid_argument(what + ": timeout must be > 0, retries >= 0 and backoff >= 0");
  }
}

std::string http_post_json(const HttpUrl& url, const std::string& body, const HttpRetryPolicy& policy, const std::string& what,
                           const std::string& bearer_token) {
  http::request<http::string_body> request{http::verb::post, url.path, 11};
  request.set(http::field::host, url.host);
  request.set(http::field::content_type, "application/json");
  if (!bearer_token.empty()) request.set(http::field::authorization, "Bearer " + bearer_token);
  request.body() = body;
  request.prepare_payload();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(policy.timeout_s * 1000));
  std::string last_error;
  std::optional<double> asked_wait;  // the last answer's Retry-After
  for (int k = 0; k <= policy.retries; ++k) {
    if (k > 0) std::this_thread::sleep_for(std::chrono::duration<double>(asked_wait.value_or(policy.backoff_s * (1 << (k - 1)))));
    try {
      return attempt(url, request, timeout);
    } catch (const TransientError& error) {
      last_error = error.what();
      asked_wait = error.retry_after;
    } catch (const std::runtime_error& error) {
      throw std::runtime_error(what + ": " + url.text + ": " + error.what());
    }
  }
  throw std::runtime_error(what + ": cannot reach " + url.text + " after " + std::to_string(policy.retries + 1) +
                           " attempts (last: " + last_error + ")");
}

}  // namespace turnrl::agents
