#pragma once
// A client-side budget of requests and tokens per minute for one model, as hosted APIs limit them.
// Each attempt is admitted at a time that keeps to both rates: attempts go 60/requests_per_minute s
// apart, and each one's tokens hold the next back by tokens * 60/tokens_per_minute s (a token
// bucket that saves up no burst, since hosted APIs enforce a minute's budget over shorter spans
// too). An attempt's tokens are known only from its reply's usage: it is charged an estimate from
// its prompt's characters (at the tokens per character the replies so far showed, 1/4 before
// any), and its reply's usage then corrects the charge.
#include <chrono>
#include <cstddef>

namespace turnrl::agents {

class RequestBudget {
 public:
  using Clock = std::chrono::steady_clock;
  /** 0: no limit of that kind. Throws std::invalid_argument for a negative rate. */
  RequestBudget(double requests_per_minute, double tokens_per_minute);
  bool limited() const { return requests_per_minute_ > 0 || tokens_per_minute_ > 0; }

  struct Admission {
    Clock::time_point at;  // when the attempt may be sent: `now` or later
    double tokens = 0.0;   // what it was charged (estimated)
  };
  /** Reserves the next admission for an attempt whose prompt has `prompt_chars` characters. */
  Admission admit(Clock::time_point now, size_t prompt_chars);
  /** The reply's usage (prompt + completion tokens) replaces the admission's estimate. */
  void settle(const Admission& admission, size_t prompt_chars, size_t used_tokens);

 private:
  double estimate(size_t prompt_chars) const;

  double requests_per_minute_, tokens_per_minute_;
  Clock::time_point next_request_{}, next_tokens_{};  // the earliest admission each rate allows
  double seen_tokens_ = 0.0, seen_chars_ = 0.0;       // over the replies settled so far
};

}  // namespace turnrl::agents
