#include "envs/reply_parser.h"

#include <algorithm>
#include <cctype>

#include <utf8proc.h>

namespace turnrl::envs {
namespace {

bool is_ascii_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string strip_ascii(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && is_ascii_space(text[begin])) ++begin;
  while (end > begin && is_ascii_space(text[end - 1])) --end;
  return std::string(text.substr(begin, end - begin));
}

/** Python's str.isspace() for one code point: bidirectional class WS, B or S, or category Zs. */
bool is_python_space(utf8proc_int32_t code_point) {
  const utf8proc_property_t* property = utf8proc_get_property(code_point);
  return property->category == UTF8PROC_CATEGORY_ZS || property->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
         property->bidi_class == UTF8PROC_BIDI_CLASS_B || property->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

/** One UTF-8 character of `text` at `at`: its code point (-1 for an invalid byte) and length. */
struct Character {
  utf8proc_int32_t code_point;
  size_t length;
};
Character character_at(std::string_view text, size_t at) {
  utf8proc_int32_t code_point = -1;
  const utf8proc_ssize_t length = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + at),
                                                   static_cast<utf8proc_ssize_t>(text.size() - at), &code_point);
  if (length <= 0) return {-1, 1};
  return {code_point, static_cast<size_t>(length)};
}

/** BALROG's naive filter on a Python str: `re.sub(r"[^a-zA-Z\s:]", "", text.strip())`. Both the
 *  strip and `\s` are Unicode-aware there, so a no-break space is kept ("do\u00a0wn" stays invalid). */
std::string balrog_letter_filter(std::string_view reply) {
  std::vector<Character> characters;
  std::vector<size_t> offsets;
  for (size_t at = 0; at < reply.size();) {
    characters.push_back(character_at(reply, at));
    offsets.push_back(at);
    at += characters.back().length;
  }
  auto space = [&](size_t i) { return characters[i].code_point >= 0 && is_python_space(characters[i].code_point); };
  size_t begin = 0, end = characters.size();
  while (begin < end && space(begin)) ++begin;
  while (end > begin && space(end - 1)) --end;
  std::string kept;
  for (size_t i = begin; i < end; ++i) {
    const utf8proc_int32_t c = characters[i].code_point;
    const bool ascii_letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (ascii_letter || c == ':' || space(i)) kept.append(reply.substr(offsets[i], characters[i].length));
  }
  return kept;
}

/** Verlog's marker search: the last occurrence of the first marker present, in this order. */
struct Marker {
  size_t begin = std::string_view::npos, end = 0;
};
Marker find_action_marker(std::string_view text) {
  for (std::string_view marker : {"ACTION:", "action:", "Action"}) {
    const size_t at = text.rfind(marker);
    if (at != std::string_view::npos) return {at, at + marker.size()};
  }
  return {};
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
  text = strip_ascii(text);
  if (rules.underscores_to_spaces) std::replace(text.begin(), text.end(), '_', ' ');
  if (rules.letter_case == ActionTextRules::Case::kLower) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  } else {
    text = title_case(text);
  }
  if (rules.drop_trailing_punctuation && !text.empty() && (text.back() == '.' || text.back() == ',')) {
    text.pop_back();
  }
  return strip_ascii(text);
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

/** Replaces `candidate` by a translation from `synonyms` (one of several chosen by `rng`). */
bool translate(std::string& candidate, const Synonyms& synonyms, std::mt19937_64& rng) {
  const auto found = synonyms.find(candidate);
  if (found == synonyms.end() || found->second.empty()) return false;
  const auto& options = found->second;
  candidate = options.size() == 1 ? options.front() : options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
  return true;
}

int index_of(const Env& env, const std::string& name) {
  const auto& actions = env.actions();
  for (size_t i = 0; i < actions.size(); ++i) {
    if (actions[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

ParsedReply parse_reply(std::string_view reply, const Env& env, ReplyFormat format, std::mt19937_64& rng,
                        const Synonyms& extra_synonyms) {
  ParsedReply parsed;
  if (format == ReplyFormat::kBalrogNaive) {
    parsed.candidate = balrog_letter_filter(reply);
  } else {
    const Marker marker = find_action_marker(reply);
    if (marker.begin != std::string_view::npos) {
      parsed.has_marker = true;
      parsed.marker_begin = marker.begin;
      parsed.action_begin = marker.end;
    }
    const ActionTextRules& rules = env.text_rules();
    parsed.candidate = normalise(reply.substr(parsed.action_begin), rules);
    translate(parsed.candidate, rules.translations, rng);
    if (!rules.drop_parenthesised_after.empty() && parsed.candidate.find(rules.drop_parenthesised_after) != std::string::npos &&
        parsed.candidate.find('(') != std::string::npos) {
      parsed.candidate = strip_ascii(drop_parenthesised_groups(parsed.candidate));
    }
  }
  int index = index_of(env, parsed.candidate);
  if (index < 0 && translate(parsed.candidate, extra_synonyms, rng)) index = index_of(env, parsed.candidate);
  parsed.valid = index >= 0;
  parsed.action = parsed.valid ? index : env.default_action();
  return parsed;
}

std::string history_entry_text(std::string_view reply, const ParsedReply& parsed, const std::string& executed_action,
                               HistoryEntry entry, ReplyFormat format) {
  switch (entry) {
    case HistoryEntry::kRawReply:
      // BALROG's naive agent stores its letter-filtered completion.
      return format == ReplyFormat::kBalrogNaive ? parsed.candidate : std::string(reply);
    case HistoryEntry::kExecutedAction:
      return executed_action;
    case HistoryEntry::kReplyWithExecuted:
      return std::string(parsed.has_marker ? reply.substr(0, parsed.marker_begin) : reply) + "\nACTION: " + executed_action + ".\n";
  }
  return std::string(reply);
}

std::string invalid_action_feedback(const std::string& default_action_name) {
  return "\n\nYour previous output did not contain a valid action. Defaulted to action: " + default_action_name +
         "\n\nObservation:\n";
}

}  // namespace turnrl::envs
