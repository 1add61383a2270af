#pragma once
// One JSON POST over Boost.Beast with what every HTTP client of the project needs: a timeout per
// attempt (connect, send, receive each), retries with exponential backoff on transient failures
// (timeouts, connection errors, 429 and 5xx; a server's Retry-After replaces the backoff), and
// errors that name the URL. Plain http only (use a local proxy for TLS endpoints). The reward
// scorer client posts through it; HttpUrl also parses the OpenAI-compatible agent's base_url.
#include <optional>
#include <string>

namespace turnrl::agents {

/** An http:// URL split for Beast. */
struct HttpUrl {
  std::string text;  // as given, for messages
  std::string host, port, path;
  /** Throws std::invalid_argument (prefixed with `what`) for a malformed or non-http URL. */
  static HttpUrl parse(const std::string& url, const std::string& what);
};

struct HttpRetryPolicy {
  double timeout_s = 60.0;  // per attempt and stage
  int retries = 3;          // attempts after the first
  double backoff_s = 0.5;   // wait before retry k: backoff_s * 2^k
  /** Throws std::invalid_argument (prefixed with `what`) unless timeout_s > 0, retries >= 0, backoff_s >= 0. */
  void validate(const std::string& what) const;
};

/** The wait before retrying that a 429 or 5xx asks for: OpenAI's `retry-after-ms` first, then
 *  `Retry-After` in seconds (the headers' values, empty when absent). nullopt when neither is a
 *  number in [0, 60] s (an HTTP date, a longer wait): the client's own backoff applies then. */
std::optional<double> retry_after_seconds(const std::string& retry_after_ms, const std::string& retry_after);

/**
 * POSTs `body` (JSON text) to `url` with `bearer_token` (when non-empty) and returns the body of the
 * 200 response. Throws std::runtime_error "`what`: URL: problem" for a non-transient failure (e.g.
 * HTTP 400, with the start of its body), or "`what`: cannot reach URL after N attempts (last: ...)"
 * when every attempt failed transiently.
 */
std::string http_post_json(const HttpUrl& url, const std::string& body, const HttpRetryPolicy& policy, const std::string& what,
                           const std::string& bearer_token = "");

}  // namespace turnrl::agents
