#include "memory/history.h"

#include <limits>
#include <stdexcept>

namespace turnrl::memory {

const char* const kBalrogNaiveSuffix =
    "You always have to output one of the above actions at a time and no other text. You always have to output an "
    "action until the episode terminates.";

std::string verlog_format_instruction(const std::string& action_list) {
  std::string text =
      "What will you do next? Please respond in the following format:\n"
      "    THINK: step-by-step reasoning\n"
      "    ACTION: One valid action from the allowed set";
  return text + (action_list.empty() ? "." : ": " + action_list);
}

History::History(HistoryConfig config) : config_(std::move(config)) {
  if (config_.max_turns < 0) throw std::invalid_argument("memory: max_turns must be >= 0, got " + std::to_string(config_.max_turns));
  if (config_.max_reasoning_turns < 0) {
    throw std::invalid_argument("memory: max_reasoning_turns must be >= 0, got " + std::to_string(config_.max_reasoning_turns));
  }
}

size_t History::capacity() const {
  if (config_.layout == PromptLayout::kTranscript) return std::numeric_limits<size_t>::max();
  const size_t n = static_cast<size_t>(config_.max_turns);
  // BALROG's deque holds 2n events (its oldest is a reply), Verlog's 2n+1 (n replies, n+1 observations);
  // both always keep the current observation.
  return config_.layout == PromptLayout::kBalrog ? std::max<size_t>(2 * n, 1) : 2 * n + 1;
}

void History::reset(std::string instruction) {
  instruction_ = std::move(instruction);
  events_.clear();
}

void History::add_observation(envs::TextObservation observation) {
  Event event;
  event.observation = std::move(observation);
  events_.push_back(std::move(event));
  while (events_.size() > capacity()) events_.pop_front();
}

void History::add_reply(std::string reply, std::string executed_action) {
  if (config_.skip_empty_replies && reply.empty()) return;
  Event event;
  event.is_observation = false;
  event.reply = std::move(reply);
  event.executed_action = std::move(executed_action);
  events_.push_back(std::move(event));
  while (events_.size() > capacity()) events_.pop_front();
}

std::vector<ChatMessage> History::render_transcript(size_t first_event) const {
  std::vector<ChatMessage> messages = {{"user", instruction_}};
  const std::string suffix = config_.suffix.empty() ? "" : "\n\n" + config_.suffix;
  for (size_t i = first_event; i < events_.size(); ++i) {
    const Event& event = events_[i];
    if (!event.is_observation) {
      messages.push_back({"assistant", event.reply});
      continue;
    }
    std::string content = "Observation:\n";
    if (!event.observation.short_term.empty()) content += event.observation.short_term + "\n";
    messages.push_back({"user", content + event.observation.long_term + suffix});
  }
  return messages;
}

std::vector<ChatMessage> History::render(size_t first_event) const {
  if (config_.layout == PromptLayout::kTranscript) return render_transcript(first_event);
  const bool balrog = config_.layout == PromptLayout::kBalrog;
  std::vector<ChatMessage> messages;
  messages.push_back({balrog ? "user" : "system", instruction_});
  size_t replies_after = 0;  // replies newer than the one being rendered
  std::vector<size_t> reply_rank(events_.size(), 0);
  for (size_t i = events_.size(); i-- > 0;) {
    if (!events_[i].is_observation) reply_rank[i] = replies_after++;
  }
  size_t last_observation = events_.size();
  for (size_t i = events_.size(); i-- > 0;) {
    if (events_[i].is_observation) {
      last_observation = i;
      break;
    }
  }
  for (size_t i = first_event; i < events_.size(); ++i) {
    const Event& event = events_[i];
    if (!event.is_observation) {
      std::string content;
      if (balrog) {
        content = event.reply;
      } else if (reply_rank[i] < static_cast<size_t>(config_.max_reasoning_turns)) {
        content = "Previous plan:\n" + event.reply;
      } else {
        content = event.executed_action;
      }
      messages.push_back({"assistant", std::move(content)});
    } else if (i != last_observation) {
      messages.push_back({"user", "Observation:\n" + event.observation.long_term});
    } else {
      std::string content = "Current Observation:\n";
      if (!event.observation.short_term.empty()) content += event.observation.short_term + "\n";
      content += event.observation.long_term;
      messages.push_back({"user", std::move(content)});
    }
  }
  if (!config_.suffix.empty()) {
    for (size_t i = messages.size(); i-- > 0;) {
      if (messages[i].role == "user") {
        messages[i].content += "\n\n" + config_.suffix;
        break;
      }
    }
  }
  return messages;
}

std::vector<ChatMessage> History::messages(const TokenCounter& count) const {
  size_t first = 0;
  std::vector<ChatMessage> rendered = render(first);
  if (config_.token_budget == 0 || !count) return rendered;
  // Drop whole turns from the front: the window then starts at the next observation.
  while (count(rendered) > config_.token_budget) {
    size_t next = first + 1;
    while (next < events_.size() && !events_[next].is_observation) ++next;
    if (next >= events_.size()) break;  // only the current observation is left: keep it
    first = next;
    rendered = render(first);
  }
  return rendered;
}

}  // namespace turnrl::memory
