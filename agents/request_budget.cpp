#include "agents/request_budget.h"

#include <algorithm>
#include <stdexcept>

namespace turnrl::agents {
namespace {

constexpr double kTokensPerCharBeforeAnyReply = 0.25;

RequestBudget::Clock::duration seconds(double s) {
  return std::chrono::duration_cast<RequestBudget::Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

RequestBudget::RequestBudget(double requests_per_minute, double tokens_per_minute)
    : requests_per_minute_(requests_per_minute), tokens_per_minute_(tokens_per_minute) {
  if (!(requests_per_minute >= 0 && tokens_per_minute >= 0)) {
    throw std::invalid_argument("request budget: requests_per_minute and tokens_per_minute must be >= 0");
  }
}

double RequestBudget::estimate(size_t prompt_chars) const {
  const double per_char = seen_chars_ > 0 ? seen_tokens_ / seen_chars_ : kTokensPerCharBeforeAnyReply;
  return per_char * static_cast<double>(prompt_chars);
}

RequestBudget::Admission RequestBudget::admit(Clock::time_point now, size_t prompt_chars) {
  Admission admission;
  admission.at = std::max({now, next_request_, next_tokens_});
  if (requests_per_minute_ > 0) next_request_ = admission.at + seconds(60.0 / requests_per_minute_);
  if (tokens_per_minute_ > 0) {
    admission.tokens = estimate(prompt_chars);
    next_tokens_ = admission.at + seconds(admission.tokens * 60.0 / tokens_per_minute_);
  }
  return admission;
}

void RequestBudget::settle(const Admission& admission, size_t prompt_chars, size_t used_tokens) {
  seen_tokens_ += static_cast<double>(used_tokens);
  seen_chars_ += static_cast<double>(prompt_chars);
  if (tokens_per_minute_ > 0) next_tokens_ += seconds((static_cast<double>(used_tokens) - admission.tokens) * 60.0 / tokens_per_minute_);
}

}  // namespace turnrl::agents
