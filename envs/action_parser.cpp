#include "envs/action_parser.h"

#include <algorithm>
#include <cctype>

namespace turnrl::envs {
namespace {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string strip(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && is_space(text[begin])) ++begin;
  while (end > begin && is_space(text[end - 1])) --end;
  return std::string(text.substr(begin, end - begin));
}

/** Text after the last occurrence of the first marker present (Verlog's order), else all. */
std::string_view after_action_marker(std::string_view text) {
  for (std::string_view marker : {"ACTION:", "action:", "Action"}) {
    const size_t at = text.rfind(marker);
    if (at != std::string_view::npos) return text.substr(at + marker.size());
  }
  return text;
}

/** Python's str.title() on ASCII: upper-case a letter that follows a non-letter. */
std::string title_case(std::string_view text) {
  std::string out(text);
  bool previous_is_letter = false;
  for (char& c : out) {
    const bool letter = std::isalpha(static_cast<unsigned char>(c)) != 0;
    if (letter) c = static_cast<char>(previous_is_letter ? std::tolower(c) : std::toupper(c));
    previous_is_letter = letter;
  }
  return out;
}

std::string normalise(std::string_view raw, const ActionTextRules& rules) {
  std::string text(raw);
  if (rules.cut_at_newline) text = text.substr(0, text.find('\n'));
  text = strip(text);
  if (rules.underscores_to_spaces) std::replace(text.begin(), text.end(), '_', ' ');
  if (rules.letter_case == ActionTextRules::Case::kLower) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  } else {
    text = title_case(text);
  }
  if (rules.drop_trailing_punctuation && !text.empty() && (text.back() == '.' || text.back() == ',')) {
    text.pop_back();
  }
  return strip(text);
}

/** re.sub(r"\(.*?\)", "", text): each "(" up to the next ")"; an unclosed "(" stays. */
std::string drop_parenthesised_groups(std::string text) {
  size_t open = 0;
  while ((open = text.find('(', open)) != std::string::npos) {
    const size_t close = text.find(')', open);
    if (close == std::string::npos) break;
    text.erase(open, close - open + 1);
  }
  return text;
}

int index_of(const Env& env, const std::string& name) {
  const auto& actions = env.actions();
  for (size_t i = 0; i < actions.size(); ++i) {
    if (actions[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

ParsedAction parse_action(std::string_view reply, const Env& env, ReplyFormat format, std::mt19937_64& rng) {
  ParsedAction parsed;
  if (format == ReplyFormat::kBalrogNaive) {
    const std::string stripped = strip(reply);
    for (char c : stripped) {
      if (std::isalpha(static_cast<unsigned char>(c)) || is_space(c) || c == ':') {
        parsed.candidate.push_back(c);
      }
    }
  } else {
    parsed.candidate = normalise(after_action_marker(reply), env.text_rules());
    const auto& translations = env.text_rules().translations;
    if (const auto found = translations.find(parsed.candidate); found != translations.end() && !found->second.empty()) {
      const auto& options = found->second;
      parsed.candidate = options.size() == 1
                             ? options.front()
                             : options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
    }
    const std::string& word = env.text_rules().drop_parenthesised_after;
    if (!word.empty() && parsed.candidate.find(word) != std::string::npos &&
        parsed.candidate.find('(') != std::string::npos) {
      parsed.candidate = strip(drop_parenthesised_groups(parsed.candidate));
    }
  }
  const int index = index_of(env, parsed.candidate);
  parsed.valid = index >= 0;
  parsed.action = parsed.valid ? index : env.default_action();
  return parsed;
}

std::string invalid_action_feedback(const std::string& default_action_name) {
  return "\n\nYour previous output did not contain a valid action. Defaulted to action: " + default_action_name +
         "\n\nObservation:\n";
}

}  // namespace turnrl::envs
