#include "tools/serve/hosted_api_traffic.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace turnrl::serve {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/** In (0, 1): never 0, so its log is finite. */
double unit(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) / 9007199254740992.0; }

}  // namespace

HostedApiTraffic::HostedApiTraffic(HostedApiProfile profile) : profile_(profile) {
  if (!(profile.median_ms >= 0 && profile.sigma >= 0 && profile.time_scale >= 0)) {
    throw std::invalid_argument("hosted API traffic: median, sigma and time scale must be >= 0");
  }
  if (!(profile.rate_429 >= 0 && profile.rate_5xx >= 0 && profile.rate_429 + profile.rate_5xx <= 1)) {
    throw std::invalid_argument("hosted API traffic: the 429 and 5xx rates must be >= 0 and sum to at most 1");
  }
}

ChatStubReply HostedApiTraffic::answer(uint64_t request_seed, const std::string& content) {
  const int attempt = attempts_[request_seed]++;
  const uint64_t key = splitmix64(profile_.seed ^ splitmix64(request_seed ^ splitmix64(static_cast<uint64_t>(attempt))));
  const double fault = unit(splitmix64(key + 1));
  // Box-Muller: one standard normal from two uniforms.
  const double normal = std::sqrt(-2.0 * std::log(unit(splitmix64(key + 2)))) * std::cos(2.0 * std::numbers::pi * unit(splitmix64(key + 3)));
  const double latency_ms = profile_.median_ms * std::exp(profile_.sigma * normal) * profile_.time_scale;
  ChatStubReply reply;
  reply.delay_ms = static_cast<int>(std::lround(latency_ms));
  if (fault < profile_.rate_429) {  // a rate limiter answers before any model runs
    ++rate_limited_;
    reply.status = 429;
    reply.delay_ms = 0;
    reply.headers = {{"Retry-After", "1"}, {"retry-after-ms", std::to_string(std::lround(1000.0 * profile_.time_scale))}};
  } else if (fault < profile_.rate_429 + profile_.rate_5xx) {
    ++server_errors_;
    reply.status = 503;
  } else {
    reply.content = content;
  }
  return reply;
}

}  // namespace turnrl::serve
