#include "trainer/format_stage.h"

#include <filesystem>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "agents/model/language_model.h"
#include "agents/model/model_config.h"
#include "agents/model/model_presets.h"
#include "agents/model/tokenizer.h"
#include "trainer/policy_agent.h"
#include "trainer/rollout/sft_data.h"
#include "trainer/sft.h"

namespace turnrl::trainer {
namespace {

bool holds_model(const std::string& dir) { return std::filesystem::exists(dir + "/config.json"); }

/** One DAgger round on the model in `dir`: it plays the round's episodes (sampled as in training,
 *  on seeds below those of the earlier rounds), the expert labels every turn, and the model
 *  fine-tuned on the aggregate (the demonstrations and every round's labels so far, as DAgger
 *  trains) replaces it in `dir`; the data and loss curves of earlier rounds stay beside it. On the
 *  labels alone a round forgets as much as it learns (docs/results). */
void run_dagger_round(const TrainConfig& c, SftDataSpec data, int round, const std::string& dir, const SftSettings& settings) {
  const std::string learner_dir = dir + ".learner";
  std::filesystem::remove_all(learner_dir);
  std::filesystem::rename(dir, learner_dir);
  data.episodes = c.format.dagger_episodes;
  data.first_seed -= static_cast<uint64_t>(round) * static_cast<uint64_t>(c.format.dagger_episodes);
  const std::string data_path = learner_dir + "/dagger" + std::to_string(round) + ".jsonl";
  {
    const std::unique_ptr<agents::Agent> learner =
        make_policy_agent(agents::LanguageModel::load(learner_dir, c.model.device), c, false, c.run.seed);
    spdlog::info("format stage: DAgger round {}/{}: the model plays {} episodes, the expert labels each turn", round,
                 c.format.dagger_rounds, data.episodes);
    const SftDataCounts counts = write_sft_data(data, data_path, learner.get());
    spdlog::info("format stage: DAgger round {}: {} turns labelled, the model's mean progression {:.3f}; fine-tuning on the demonstrations and every round's labels", round,
                 counts.transcripts, counts.progression_sum / data.episodes);
  }
  std::vector<std::string> aggregate = {learner_dir + "/sft_data.jsonl"};
  for (int k = 1; k <= round; ++k) aggregate.push_back(learner_dir + "/dagger" + std::to_string(k) + ".jsonl");
  run_sft(aggregate, learner_dir, dir, settings);
  for (const auto& entry : std::filesystem::directory_iterator(learner_dir)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".jsonl") && !name.ends_with(".svg")) continue;
    const bool previous_sft = name == "sft_metrics.jsonl" || name == "sft_loss.svg";
    std::filesystem::rename(entry.path(), dir + "/" + (previous_sft ? "round" + std::to_string(round - 1) + "_" + name : name));
  }
  std::filesystem::remove_all(learner_dir);
}

void make_format_model(const TrainConfig& c) {
  const TrainConfig::Format& f = c.format;
  const std::string temp = f.model + ".tmp";
  std::filesystem::remove_all(temp);
  std::filesystem::remove_all(temp + ".learner");
  std::filesystem::create_directories(temp);
  const agents::Tokenizer tokenizer = agents::Tokenizer::load(c.model.path);
  const SftDataSpec data = format_data_spec(c, c.model.path, tokenizer);
  const std::string data_path = temp + "/sft_data.jsonl";
  spdlog::info("format stage: {} episodes of template replies '{}' -> {}", f.episodes, f.reply_template, data_path);
  const SftDataCounts counts = write_sft_data(data, data_path);
  spdlog::info("format stage: {} turns played, {} written (from {} of {} episodes, mean progression {:.3f}); fine-tuning {}",
               counts.turns, counts.transcripts, counts.episodes_written, f.episodes, counts.progression_sum / f.episodes, c.model.path);
  SftSettings settings;
  settings.epochs = f.epochs;
  settings.lr = f.lr;
  settings.batch_size = f.batch_size;
  settings.seed = c.run.seed;
  settings.device = c.model.device;
  run_sft({data_path}, c.model.path, temp, settings);
  settings.epochs = f.dagger_epochs;
  for (int round = 1; round <= f.dagger_rounds; ++round) run_dagger_round(c, data, round, temp, settings);
  std::filesystem::remove_all(f.model);
  std::filesystem::rename(temp, f.model);
}

}  // namespace

SftDataSpec format_data_spec(const TrainConfig& c, const std::string& model_dir, const agents::Tokenizer& tokenizer) {
  const int context = agents::ModelConfig::load(model_dir + "/config.json").max_position_embeddings;
  SftDataSpec data;
  data.tasks = c.format.tasks.empty() ? c.env.ids : c.format.tasks;
  data.env_options = c.env.options;
  data.turn = c.turn;
  data.reply_template = c.format.reply_template;
  data.policy = c.format.policy;
  data.keyed_share = c.format.keyed_share;
  data.expert_noise = c.format.expert_noise;
  data.expert_sight = c.format.expert_sight;
  data.min_progression = c.format.min_progression;
  data.episodes = c.format.episodes;
  // The top of the run's training block: seeds evaluation never uses (TrainConfig::load checks).
  data.first_seed = c.run.first_training_seed() + TrainConfig::Run::kTrainingSeedSpan - static_cast<uint64_t>(c.format.episodes);
  data.token_counter = [&tokenizer](const std::vector<memory::ChatMessage>& messages) { return tokenizer.encode_chat(messages, true).size(); };
  data.max_prompt_tokens = static_cast<size_t>(std::max(1, context - c.sampling.max_response_tokens));
  return data;
}

std::string prepare_initial_model(const TrainConfig& c) {
  if (!holds_model(c.model.path)) {
    if (c.model.preset.empty()) {
      throw std::invalid_argument("model.path '" + c.model.path + "' holds no model (config.json) and model.preset is not set");
    }
    spdlog::info("creating a '{}' model in {}", c.model.preset, c.model.path);
    agents::write_new_model(c.model.preset, c.model.path, c.run.seed, "");
  }
  if (!c.format.model.empty()) {
    if (holds_model(c.format.model)) {
      spdlog::info("format stage: reusing {}", c.format.model);
    } else {
      make_format_model(c);
    }
  }
  return c.initial_model();
}

}  // namespace turnrl::trainer
