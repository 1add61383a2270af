#include "tools/balrog_layout.h"

#include <map>
#include <utility>

#include <fmt/format.h>

#include "tools/eval_sweep.h"

namespace turnrl::tools {
namespace {

namespace fs = std::filesystem;

/** A field as Python's csv writer (BALROG's) writes it: quoted where it holds a comma, a quote or a line break. */
std::string python_csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

/** Step, Action, Reasoning, Observation, Reward, Done: the action played, the reply it was read
 *  from, and the observation it answered (the prompt's last message). */
std::string trajectory_csv(const nlohmann::json& record, bool done) {
  std::string out = "Step,Action,Reasoning,Observation,Reward,Done\r\n";
  const nlohmann::json& turns = record.at("turns");
  for (size_t step = 0; step < turns.size(); ++step) {
    const nlohmann::json& turn = turns[step];
    const nlohmann::json& prompt = turn.at("prompt");
    const std::string observation = prompt.empty() ? "" : prompt.back().at("content").get<std::string>();
    const bool last = step + 1 == turns.size();
    out += std::to_string(step) + "," + python_csv_field(turn.at("action")) + "," + python_csv_field(turn.at("reply")) + "," +
           python_csv_field(observation) + "," + nlohmann::json(turn.at("reward").get<double>()).dump() + "," +
           (last && done ? "True" : "False") + "\r\n";
  }
  return out;
}

/** BALROG's `done`: the env ended the episode, not the sweep's turn cap. */
bool env_done(const nlohmann::json& record, int max_turns) {
  const size_t steps = record.at("steps");
  return record.at("terminated").get<bool>() ||
         (record.at("truncated").get<bool>() && (max_turns == 0 || steps < static_cast<size_t>(max_turns)));
}

nlohmann::json percentages(const SummaryRow& row) {
  return {{"progression_percentage", row.mean}, {"standard_error", row.standard_error}, {"episodes_played", row.episodes}};
}

}  // namespace

std::string balrog_task_name(const std::string& env_id) {
  const std::string family = family_of(env_id);
  const std::string task = env_id.substr(env_id.find('/') + 1);  // the whole id where it has no '/'
  if (family == "babyai") return "BabyAI-MixedTrainLocal-v0/" + task;
  if (family == "babaisai") return "env/" + task;
  if (env_id == "crafter/balrog") return "default";
  return task;
}

BalrogLayout::BalrogLayout(const EvalConfig& config) : config_(config) {}

fs::path BalrogLayout::run_dir(const std::string& name) const {
  std::string folder = name;
  for (char& c : folder) c = c == '/' ? '_' : c;
  return fs::path(config_.output_dir) / "balrog" / folder;
}

nlohmann::json BalrogLayout::client(const std::string& name) const {
  for (const EvalModel& model : config_.models) {
    if (model.name != name) continue;
    const bool http = model.type == EvalModel::Type::kHttp;
    if (!http && model.type != EvalModel::Type::kLlm) return {{"client_name", trainer::enum_name(model.type)}, {"model_id", name}};
    return {{"client_name", http ? "openai" : "turnrl"},
            {"model_id", http ? model.model : model.path},
            {"base_url", model.base_url},
            {"generate_kwargs", {{"temperature", model.temperature}, {"max_tokens", model.max_new_tokens}}},
            {"timeout", model.timeout_s},
            {"max_retries", model.retries},
            {"delay", model.backoff_s}};
  }
  return {{"model_id", name}};  // a model the config no longer lists
}

nlohmann::json BalrogLayout::agent() const {
  const trainer::TurnSettings& turn = config_.runner.turn;
  const bool naive = turn.layout == trainer::TurnLayout::kBalrog;
  return {{"type", naive ? "naive" : "turnrl-" + trainer::enum_name(turn.layout)}, {"max_text_history", turn.history}, {"max_image_history", 0}};
}

void BalrogLayout::write_episode(const nlohmann::json& record, bool overwrite) const {
  const std::string model = record.at("model"), env_id = record.at("task");
  const std::string task = balrog_task_name(env_id);
  const int run = record.value("repeat", 0) * config_.episodes_per_task + record.at("episode").get<int>();
  const fs::path stem = run_dir(model) / family_of(env_id) / task / fmt::format("{}_run_{:02d}", task, run);
  const fs::path json_path = stem.string() + ".json";
  if (!overwrite && fs::exists(json_path)) return;
  fs::create_directories(json_path.parent_path());

  nlohmann::json actions = nlohmann::json::object(), failed = nlohmann::json::array();
  for (const auto& turn : record.at("turns")) {
    const std::string action = turn.at("action");
    actions[action] = actions.value(action, 0) + 1;
    if (!turn.at("valid").get<bool>()) failed.push_back(turn.at("reply"));
  }
  const bool done = env_done(record, config_.runner.turn.max_turns);
  nlohmann::json episode = {{"task", task},
                            {"action_frequency", std::move(actions)},
                            {"input_tokens", record.value("prompt_tokens", size_t{0})},
                            {"output_tokens", record.value("completion_tokens", size_t{0})}};
  if (done) episode["done"] = true;
  episode["episode_return"] = record.at("return");
  episode["num_steps"] = record.at("steps");
  episode["failed_candidates"] = std::move(failed);
  episode["progression"] = record.at("progression");
  if (family_of(env_id) == "crafter") {  // BALROG's Crafter stats: the unlocked achievements (each once) and their count
    nlohmann::json unlocked = nlohmann::json::object();
    for (const auto& name : record.at("achievements")) unlocked[name.get<std::string>()] = 1;
    episode["score"] = unlocked.size();
    episode["achievements"] = std::move(unlocked);
  }
  episode["process_num"] = nullptr;
  episode["seed"] = record.at("seed");
  episode["agent"] = agent();
  episode["client"] = client(model);
  episode["turnrl"] = {{"model", model}, {"task", env_id}, {"episode", record.at("episode")}, {"repeat", record.value("repeat", 0)}};
  write_file(json_path, episode.dump(4) + "\n");
  write_file(stem.string() + ".csv", trajectory_csv(record, done));
}

void BalrogLayout::write_summaries(const std::vector<EpisodeResult>& episodes) const {
  std::map<std::string, std::vector<EpisodeResult>> by_model;
  for (const auto& e : episodes) by_model[e.model].push_back(e);
  for (const auto& [model, results] : by_model) {
    std::map<std::string, size_t> steps;  // per env
    for (const auto& e : results) steps[e.env] += e.steps;
    nlohmann::json environments = nlohmann::json::object(), tasks = nlohmann::json::object();
    nlohmann::json summary;
    for (const SummaryRow& row : summarize(results)) {
      if (row.env == "all") {
        summary = {{"average_progress", row.mean},
                   {"standard_error", row.standard_error},
                   {"environments", environments},
                   {"total_input_tokens", row.prompt_tokens},
                   {"total_output_tokens", row.completion_tokens},
                   {"client", client(model)},
                   {"agent", agent()}};
      } else if (row.task != "all") {
        tasks[balrog_task_name(row.task)] = percentages(row);
      } else {  // the env's row follows its tasks'
        nlohmann::json env = percentages(row);
        env["average_steps"] = static_cast<double>(steps[row.env]) / static_cast<double>(row.episodes);
        env["tasks"] = std::exchange(tasks, nlohmann::json::object());
        env["input_tokens"] = row.prompt_tokens;
        env["output_tokens"] = row.completion_tokens;
        fs::create_directories(run_dir(model) / row.env);
        write_file(run_dir(model) / row.env / (row.env + "_summary.json"), env.dump(4) + "\n");
        environments[row.env] = percentages(row);
      }
    }
    write_file(run_dir(model) / "summary.json", summary.dump(4) + "\n");
  }
}

}  // namespace turnrl::tools
