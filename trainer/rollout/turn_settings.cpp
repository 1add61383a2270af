#include "trainer/rollout/turn_settings.h"

#include <algorithm>
#include <stdexcept>

#include "envs/registry.h"

namespace turnrl::trainer {
namespace {

const std::vector<std::string> kLayouts = {"balrog", "verlog", "compact"};
const std::vector<std::string> kSuffixes = {"auto", "none", "balrog-naive", "verlog-cot"};
const std::vector<std::string> kReplyFormats = {"balrog", "action-tag"};
const std::vector<std::string> kHistoryEntries = {"raw", "action", "reply-with-action", "family"};

template <typename Enum>
Enum from_name(const std::vector<std::string>& names, const std::string& name) {
  return static_cast<Enum>(std::find(names.begin(), names.end(), name) - names.begin());
}
template <typename Enum>
const std::string& to_name(const std::vector<std::string>& names, Enum value) {
  return names.at(static_cast<size_t>(value));
}

}  // namespace

memory::HistoryConfig TurnSettings::history_config(size_t agent_prompt_limit) const {
  memory::HistoryConfig config;
  config.layout = layout == TurnLayout::kVerlog ? memory::PromptLayout::kVerlog : memory::PromptLayout::kBalrog;
  config.max_turns = history;
  config.token_budget = static_cast<size_t>(token_budget);
  if (agent_prompt_limit > 0 && (config.token_budget == 0 || config.token_budget > agent_prompt_limit)) {
    config.token_budget = agent_prompt_limit;
  }
  std::string name = suffix;
  if (name == "auto") name = layout == TurnLayout::kBalrog ? "balrog-naive" : layout == TurnLayout::kVerlog ? "verlog-cot" : "none";
  config.suffix = name == "balrog-naive" ? memory::kBalrogNaiveSuffix : name == "verlog-cot" ? memory::verlog_format_instruction() : "";
  // BALROG leaves a reply that its filter emptied out of the history (its `if prev_action` test).
  config.skip_empty_replies = layout == TurnLayout::kBalrog;
  return config;
}

envs::HistoryEntry TurnSettings::history_entry_for(const std::string& env_id) const {
  return family_history_entry ? envs::family_of(env_id).verlog_history_entry : history_entry;
}

TurnSettings read_turn_settings(ConfigSection section) {
  TurnSettings settings;
  std::string layout = to_name(kLayouts, settings.layout);
  section.read("layout", layout, one_of(kLayouts), "must be " + list_names(kLayouts));
  settings.layout = from_name<TurnLayout>(kLayouts, layout);
  section.read("history", settings.history, non_negative<int>(), "must be >= 0");
  section.read("token_budget", settings.token_budget, non_negative<int>(), "must be >= 0 (0: none)");
  section.read("suffix", settings.suffix, one_of(kSuffixes), "must be " + list_names(kSuffixes));
  std::string reply_format = to_name(kReplyFormats, settings.reply_format);
  section.read("reply_format", reply_format, one_of(kReplyFormats), "must be " + list_names(kReplyFormats));
  settings.reply_format = from_name<envs::ReplyFormat>(kReplyFormats, reply_format);
  std::string entry = to_name(kHistoryEntries, settings.history_entry);
  section.read("history_entry", entry, one_of(kHistoryEntries), "must be " + list_names(kHistoryEntries));
  settings.family_history_entry = entry == "family";
  if (!settings.family_history_entry) settings.history_entry = from_name<envs::HistoryEntry>(kHistoryEntries, entry);
  section.read("invalid_penalty", settings.invalid_penalty);
  section.read("invalid_feedback", settings.invalid_feedback);
  section.read("binary_reward", settings.binary_reward);
  section.read("max_turns", settings.max_turns, non_negative<int>(), "must be >= 0 (0: the env's limit)");
  nlohmann::json synonyms = nlohmann::json::object();
  section.read_json("synonyms", synonyms);
  for (const auto& [from, to] : synonyms.items()) {
    if (to.is_string()) {
      settings.synonyms[from] = {to.get<std::string>()};
    } else if (to.is_array() && !to.empty() && std::all_of(to.begin(), to.end(), [](const auto& v) { return v.is_string(); })) {
      settings.synonyms[from] = to.get<std::vector<std::string>>();
    } else {
      section.fail("synonyms", "'" + from + "' must map to an action name or a list of them");
    }
  }
  section.finish();
  return settings;
}

void emit_turn_settings(YAML::Emitter& out, const TurnSettings& s) {
  out << YAML::BeginMap;
  out << YAML::Key << "layout" << YAML::Value << to_name(kLayouts, s.layout);
  out << YAML::Key << "history" << YAML::Value << s.history;
  out << YAML::Key << "token_budget" << YAML::Value << s.token_budget;
  out << YAML::Key << "suffix" << YAML::Value << s.suffix;
  out << YAML::Key << "reply_format" << YAML::Value << to_name(kReplyFormats, s.reply_format);
  out << YAML::Key << "history_entry" << YAML::Value
      << (s.family_history_entry ? std::string("family") : to_name(kHistoryEntries, s.history_entry));
  out << YAML::Key << "invalid_penalty" << YAML::Value << s.invalid_penalty;
  out << YAML::Key << "invalid_feedback" << YAML::Value << s.invalid_feedback;
  out << YAML::Key << "binary_reward" << YAML::Value << s.binary_reward;
  out << YAML::Key << "max_turns" << YAML::Value << s.max_turns;
  if (!s.synonyms.empty()) {
    out << YAML::Key << "synonyms" << YAML::Value << YAML::BeginMap;
    for (const auto& [from, to] : s.synonyms) out << YAML::Key << from << YAML::Value << YAML::Flow << to;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

}  // namespace turnrl::trainer
