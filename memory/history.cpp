#include "memory/history.h"

#include <stdexcept>

namespace turnrl::memory {
namespace {

constexpr const char* kBalrogSuffix =
    "You always have to output one of the above actions at a time and no other text. You always have to output an "
    "action until the episode terminates.";
constexpr const char* kVerlogSuffix =
    "What will you do next? Please respond in the following format:\n    THINK: step-by-step reasoning\n    ACTION: One "
    "valid action from the allowed set.";

}  // namespace

PromptFormat parse_prompt_format(const std::string& name) {
  if (name == "balrog") return PromptFormat::kBalrog;
  if (name == "verlog") return PromptFormat::kVerlog;
  if (name == "compact") return PromptFormat::kCompact;
  throw std::invalid_argument("unknown prompt format '" + name + "' (balrog, verlog, compact)");
}

History::History(PromptFormat format, int max_turns) : format_(format), max_turns_(max_turns) {
  if (max_turns < 0) throw std::invalid_argument("history length must be >= 0");
}

void History::reset(std::string instruction, std::string goal) {
  instruction_ = std::move(instruction);
  goal_ = std::move(goal);
  past_.clear();
  has_current_ = false;
}

void History::observe(const envs::TextObservation& observation) {
  current_ = observation;
  has_current_ = true;
}

void History::reply(std::string text) {
  if (!has_current_) throw std::logic_error("History::reply before any observation");
  past_.push_back({current_.long_term, std::move(text)});
  while (static_cast<int>(past_.size()) > max_turns_) past_.pop_front();
  has_current_ = false;
}

std::vector<ChatMessage> History::render(size_t first_turn) const {
  std::vector<ChatMessage> messages;
  if (format_ == PromptFormat::kBalrog) messages.push_back({"user", instruction_});
  if (format_ == PromptFormat::kVerlog) messages.push_back({"system", instruction_});
  for (size_t i = first_turn; i < past_.size(); ++i) {
    messages.push_back({"user", "Observation:\n" + past_[i].observation});
    messages.push_back({"assistant", past_[i].reply});
  }
  std::string current;
  if (format_ == PromptFormat::kCompact) {
    current = goal_ + "\n" + current_.long_term;
  } else {
    current = "Current Observation:\n";
    if (!current_.short_term.empty()) current += current_.short_term + "\n";
    current += current_.long_term;
    current += "\n\n";
    current += format_ == PromptFormat::kBalrog ? kBalrogSuffix : kVerlogSuffix;
  }
  messages.push_back({"user", std::move(current)});
  return messages;
}

std::vector<ChatMessage> History::messages(size_t budget, const TokenCounter& count) const {
  if (!has_current_) throw std::logic_error("History::messages before any observation");
  size_t first = 0;
  std::vector<ChatMessage> out = render(first);
  // Whole turns are dropped, oldest first, never cut in the middle.
  while (budget > 0 && count && count(out) > budget && first < past_.size()) out = render(++first);
  return out;
}

}  // namespace turnrl::memory
