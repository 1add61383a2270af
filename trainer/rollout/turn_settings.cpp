#include "trainer/rollout/turn_settings.h"

#include <algorithm>
#include <stdexcept>

#include "envs/registry.h"

namespace turnrl::trainer {

memory::HistoryConfig TurnSettings::history_config(size_t agent_prompt_limit) const {
  memory::HistoryConfig config;
  config.layout = layout == TurnLayout::kVerlog       ? memory::PromptLayout::kVerlog
                  : layout == TurnLayout::kTranscript ? memory::PromptLayout::kTranscript
                                                      : memory::PromptLayout::kBalrog;
  config.max_turns = history;
  config.token_budget = static_cast<size_t>(token_budget);
  if (agent_prompt_limit > 0 && (config.token_budget == 0 || config.token_budget > agent_prompt_limit)) {
    config.token_budget = agent_prompt_limit;
  }
  TurnSuffix chosen = suffix;
  if (chosen == TurnSuffix::kAuto) {
    chosen = layout == TurnLayout::kVerlog ? TurnSuffix::kVerlogCot : layout == TurnLayout::kCompact ? TurnSuffix::kNone : TurnSuffix::kBalrogNaive;
  }
  config.suffix = chosen == TurnSuffix::kBalrogNaive ? memory::kBalrogNaiveSuffix
                  : chosen == TurnSuffix::kVerlogCot ? memory::verlog_format_instruction()
                                                      : "";
  // BALROG leaves a reply that its filter emptied out of the history (its `if prev_action` test).
  config.skip_empty_replies = layout == TurnLayout::kBalrog;
  return config;
}

envs::HistoryEntry TurnSettings::history_entry_for(const std::string& env_id) const {
  return family_history_entry ? envs::family_of(env_id).verlog_history_entry : history_entry;
}

namespace {

/** `history_entry`: one of envs::HistoryEntry's names, or `family` (the env family's Verlog default). */
Key<TurnSettings> history_entry_key() {
  const std::vector<std::string> names = {"raw", "action", "reply-with-action", "family"};
  return {"history_entry",
          [names](ConfigSection& section, TurnSettings& s) {
            std::string name = s.family_history_entry ? "family" : enum_name(s.history_entry);
            section.read("history_entry", name, Check<std::string>{[names](const std::string& v) { return std::find(names.begin(), names.end(), v) != names.end(); },
                                                                    "must be " + list_names(names)});
            s.family_history_entry = name == "family";
            if (!s.family_history_entry) s.history_entry = *parse_enum<envs::HistoryEntry>(name);
          },
          [](YAML::Emitter& out, const TurnSettings& s) {
            out << YAML::Key << "history_entry" << YAML::Value << (s.family_history_entry ? std::string("family") : enum_name(s.history_entry));
          },
          [names](std::vector<KeyInfo>& rows, const std::string& prefix, const TurnSettings& defaults) {
            std::string type;
            for (const std::string& name : names) type += (type.empty() ? "" : " | ") + name;
            rows.push_back({prefix + "history_entry", type, value_text(defaults.history_entry),
                            "what of a reply enters the history; family: the env family's Verlog default"});
          }};
}

/** `synonyms`: normalised reply -> an action name or a list of them. */
Key<TurnSettings> synonyms_key() {
  return {"synonyms",
          [](ConfigSection& section, TurnSettings& s) {
            nlohmann::json synonyms = nlohmann::json::object();
            section.read_json("synonyms", synonyms);
            for (const auto& [from, to] : synonyms.items()) {
              if (to.is_string()) {
                s.synonyms[from] = {to.get<std::string>()};
              } else if (to.is_array() && !to.empty() && std::all_of(to.begin(), to.end(), [](const auto& v) { return v.is_string(); })) {
                s.synonyms[from] = to.get<std::vector<std::string>>();
              } else {
                section.fail("synonyms", "'" + from + "' must map to an action name or a list of them");
              }
            }
          },
          [](YAML::Emitter& out, const TurnSettings& s) {
            if (s.synonyms.empty()) return;
            out << YAML::Key << "synonyms" << YAML::Value << YAML::BeginMap;
            for (const auto& [from, to] : s.synonyms) out << YAML::Key << from << YAML::Value << YAML::Flow << to;
            out << YAML::EndMap;
          },
          [](std::vector<KeyInfo>& rows, const std::string& prefix, const TurnSettings&) {
            rows.push_back({prefix + "synonyms", "mapping", "", "extra synonyms: normalised reply -> an action name or a list of them"});
          }};
}

}  // namespace

const Schema<TurnSettings>& turn_keys() {
  using T = TurnSettings;
  static const Schema<T> keys = {
      key("layout", &T::layout, "prompt layout: BALROG's, Verlog's (system instruction, previous plan) compact (the goal line) or transcript (the whole episode, each prompt extending the last)"),
      key("history", &T::history, "previous turns kept in the prompt (BALROG 16, Verlog 1)", non_negative<int>()),
      key("token_budget", &T::token_budget, "drop the oldest turns until the prompt fits; 0: none", non_negative<int>("0: none")),
      key("suffix", &T::suffix, "appended to the last user message; auto: the layout's"),
      key("reply_format", &T::reply_format, "how a reply is parsed: BALROG's naive agent, or the text after ACTION:"),
      history_entry_key(),
      key("invalid_penalty", &T::invalid_penalty, "reward replacing the step reward after an invalid reply (BALROG 0, Verlog -0.1)"),
      key("invalid_feedback", &T::invalid_feedback, "prefix the next observation with a note that the default action ran"),
      key("binary_reward", &T::binary_reward, "a positive reward on the step that ends the game counts as 1"),
      key("max_turns", &T::max_turns, "per-episode turn cap below the env's own; 0: the env's", non_negative<int>("0: the env's limit")),
      synonyms_key(),
  };
  return keys;
}

TurnSettings read_turn_settings(ConfigSection section) {
  TurnSettings settings;
  read_keys(section, turn_keys(), settings);
  section.finish();
  return settings;
}

}  // namespace turnrl::trainer
