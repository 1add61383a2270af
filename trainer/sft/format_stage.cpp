#include "trainer/sft/format_stage.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "agents/model/language_model.h"
#include "agents/model/model_config.h"
#include "agents/model/new_model.h"
#include "agents/model/tokenizer.h"
#include "trainer/dist/distributed.h"
#include "trainer/rollout/policy_agent.h"
#include "trainer/sft/sft_data.h"
#include "trainer/sft/sft.h"

namespace turnrl::trainer {
namespace {

bool holds_model(const std::string& dir) { return std::filesystem::exists(dir + "/config.json"); }

/** The processes that make the stage: this one alone, or the ranks of a data-parallel run. */
struct StageRanks {
  ProcessGroup* group = nullptr;

  int rank() const { return group ? group->rank() : 0; }
  int size() const { return group ? group->size() : 1; }
  bool leads() const { return rank() == 0; }  // moves and removes the stage's files
  void barrier() const {
    if (group) group->barrier();
  }
  /** Whether `flag` holds on any rank. */
  bool any(bool flag) const {
    std::vector<double> value = {flag ? 1.0 : 0.0};
    if (group) group->max(value);
    return value[0] > 0;
  }
  /** Rank r's data file of `stem` in `dir`: rank 0's is the one a single process writes. */
  static std::string data_file(const std::string& dir, const std::string& stem, int r) {
    return dir + "/" + stem + (r == 0 ? "" : ".rank" + std::to_string(r)) + ".jsonl";
  }
  std::vector<std::string> data_files(const std::string& dir, const std::string& stem) const {
    std::vector<std::string> files;
    for (int r = 0; r < size(); ++r) files.push_back(data_file(dir, stem, r));
    return files;
  }
  /** Plays this rank's share of `spec`'s episodes into its own file of `stem` in `dir`; the counts of all ranks. */
  SftDataCounts write_share(SftDataSpec spec, const std::string& dir, const std::string& stem, agents::Agent* learner = nullptr) const {
    spec.rank = rank();
    spec.ranks = size();
    const SftDataCounts own = write_sft_data(spec, data_file(dir, stem, rank()), learner);
    RankTotals totals;
    totals.add("episodes", static_cast<double>(own.episodes_written));
    totals.add("turns", static_cast<double>(own.turns));
    totals.add("transcripts", static_cast<double>(own.transcripts));
    totals.add("progression", own.progression_sum);
    totals.add("guesses", static_cast<double>(own.guesses));
    totals.sum_over(group);  // also: every rank's file is written before any rank reads them
    return {static_cast<size_t>(totals["episodes"]), static_cast<size_t>(totals["turns"]), static_cast<size_t>(totals["transcripts"]),
            totals["progression"], static_cast<size_t>(totals["guesses"])};
  }
};

/** One DAgger round on the model in `dir`: it plays the round's episodes (sampled as in training,
 *  on seeds below those of the earlier rounds), the expert labels every turn, and the model
 *  fine-tuned on the aggregate (the demonstrations and every round's labels so far, as DAgger
 *  trains) replaces it in `dir`; the data and loss curves of earlier rounds stay beside it. On the
 *  labels alone a round forgets as much as it learns (docs/results). */
void run_dagger_round(const TrainConfig& c, SftDataSpec data, int round, const std::string& dir, const SftSettings& settings,
                      const StageRanks& ranks) {
  const std::string learner_dir = dir + ".learner";
  if (ranks.leads()) {
    std::filesystem::remove_all(learner_dir);
    std::filesystem::rename(dir, learner_dir);
  }
  ranks.barrier();
  data.episodes = c.format.dagger_episodes;
  data.first_seed -= static_cast<uint64_t>(round) * static_cast<uint64_t>(c.format.dagger_episodes);
  {
    const std::unique_ptr<agents::Agent> learner = make_policy_agent(agents::LanguageModel::load(learner_dir, c.model.device), c, false,
                                                                     c.run.seed + static_cast<uint64_t>(ranks.rank()));
    spdlog::info("format stage: DAgger round {}/{}: the model plays {} episodes, the expert labels each turn", round,
                 c.format.dagger_rounds, data.episodes);
    const SftDataCounts counts = ranks.write_share(data, learner_dir, "dagger" + std::to_string(round), learner.get());
    spdlog::info("format stage: DAgger round {}: {} turns labelled ({} more where the expert could only guess, left out), the model's mean "
                 "progression {:.3f}; fine-tuning on the demonstrations and every round's labels",
                 round, counts.transcripts, counts.guesses, counts.progression_sum / data.episodes);
  }
  std::vector<std::string> aggregate = ranks.data_files(learner_dir, "sft_data");
  for (int k = 1; k <= round; ++k) {
    for (const std::string& file : ranks.data_files(learner_dir, "dagger" + std::to_string(k))) aggregate.push_back(file);
  }
  run_sft(aggregate, learner_dir, dir, settings, ranks.group);
  if (ranks.leads()) {
    for (const auto& entry : std::filesystem::directory_iterator(learner_dir)) {
      const std::string name = entry.path().filename().string();
      if (!name.ends_with(".jsonl") && !name.ends_with(".svg")) continue;
      const bool previous_sft = name == "sft_metrics.jsonl" || name == "sft_loss.svg";
      std::filesystem::rename(entry.path(), dir + "/" + (previous_sft ? "round" + std::to_string(round - 1) + "_" + name : name));
    }
    std::filesystem::remove_all(learner_dir);
  }
  ranks.barrier();
}

void make_format_model(const TrainConfig& c, const StageRanks& ranks) {
  const TrainConfig::Format& f = c.format;
  const std::string temp = f.model + ".tmp";
  if (ranks.leads()) {
    std::filesystem::remove_all(temp);
    std::filesystem::remove_all(temp + ".learner");
    std::filesystem::create_directories(temp);
  }
  ranks.barrier();
  if (ranks.any(!std::filesystem::exists(temp))) {
    throw std::runtime_error("format stage: a rank does not see " + temp + ", which rank 0 made: the ranks make the stage together, "
                             "so run them on one machine (--nproc) or put format.model on a file system they share");
  }
  const agents::Tokenizer tokenizer = agents::Tokenizer::load(c.model.path);
  const SftDataSpec data = format_data_spec(c, c.model.path, tokenizer);
  spdlog::info("format stage: {} episodes of template replies '{}' -> {}", f.episodes, f.reply_template,
               fmt::join(ranks.data_files(temp, "sft_data"), ", "));
  const SftDataCounts counts = ranks.write_share(data, temp, "sft_data");
  spdlog::info("format stage: {} turns played, {} written (from {} of {} episodes, mean progression {:.3f}); fine-tuning {}",
               counts.turns, counts.transcripts, counts.episodes_written, f.episodes, counts.progression_sum / f.episodes, c.model.path);
  SftSettings settings;
  static_cast<FineTuning&>(settings) = f;
  settings.seed = c.run.seed;
  settings.device = c.model.device;
  const auto schedule = [&f](bool last) { return last && f.final_lr_schedule ? *f.final_lr_schedule : f.lr_schedule; };
  settings.lr_schedule = schedule(f.dagger_rounds == 0);
  run_sft(ranks.data_files(temp, "sft_data"), c.model.path, temp, settings, ranks.group);
  settings.epochs = f.dagger_epochs;
  for (int round = 1; round <= f.dagger_rounds; ++round) {
    settings.lr_schedule = schedule(round == f.dagger_rounds);
    run_dagger_round(c, data, round, temp, settings, ranks);
  }
  if (ranks.leads()) {
    std::filesystem::remove_all(f.model);
    std::filesystem::rename(temp, f.model);
  }
  ranks.barrier();
}

}  // namespace

SftDataSpec format_data_spec(const TrainConfig& c, const std::string& model_dir, const agents::Tokenizer& tokenizer) {
  const int context = agents::ModelConfig::load(model_dir + "/config.json").max_position_embeddings;
  SftDataSpec data;
  data.tasks = c.format.tasks.empty() ? c.env.ids : c.format.tasks;
  data.env_options = c.env.options;
  data.turn = c.turn;
  static_cast<FormatPlay&>(data) = c.format;
  data.episodes = c.format.episodes;
  // The top of the run's training block: seeds evaluation never uses (TrainConfig::load checks).
  data.first_seed = c.run.first_training_seed() + TrainConfig::Run::kTrainingSeedSpan - static_cast<uint64_t>(c.format.episodes);
  data.token_counter = [&tokenizer](const std::vector<memory::ChatMessage>& messages) { return tokenizer.encode_chat(messages, true).size(); };
  data.max_prompt_tokens = static_cast<size_t>(std::max(1, context - c.sampling.max_response_tokens));
  return data;
}

std::string prepare_initial_model(const TrainConfig& c, ProcessGroup* group) {
  const StageRanks ranks{group};
  if (ranks.leads() && !holds_model(c.model.path)) {
    if (c.model.preset.empty()) {
      throw std::invalid_argument("model.path '" + c.model.path + "' holds no model (config.json) and model.preset is not set");
    }
    spdlog::info("creating a '{}' model in {}", c.model.preset, c.model.path);
    const std::optional<double> range = c.model.initializer_range > 0 ? std::optional(c.model.initializer_range) : std::nullopt;
    agents::write_new_model(c.model.preset, c.model.path, c.run.seed, "", range);
  } else if (ranks.leads() && c.model.initializer_range > 0) {
    // A folder drawn otherwise would train silently from another start.
    const double drawn = agents::ModelConfig::load(c.model.path + "/config.json").initializer_range;
    if (std::abs(drawn - c.model.initializer_range) > 1e-9 * c.model.initializer_range) {
      throw std::invalid_argument(fmt::format("model.path '{}' holds a model drawn with initializer_range {}, not the config's {}: "
                                              "delete it or point model.path elsewhere",
                                              c.model.path, drawn, c.model.initializer_range));
    }
  }
  if (!c.format.model.empty()) {
    // Rank 0's folder decides for all (the collective also waits for its preset's model).
    if (ranks.any(ranks.leads() && !holds_model(c.format.model))) {
      make_format_model(c, ranks);
    } else {
      spdlog::info("format stage: reusing {}", c.format.model);
    }
  }
  return c.initial_model();
}

}  // namespace turnrl::trainer
