// The format stage: format data in training's prompts (make-sft-data), supervised fine-tuning (sft),
// DAgger, and what a fine-tuning can learn. PPO learning after it: test_rl_learns.
#include "torch_doctest.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "agents/model/language_model.h"
#include "agents/model/model_config.h"
#include "agents/model/new_model.h"
#include "agents/model/tokenizer.h"
#include "agents/expert_agent.h"
#include "agents/random_agent.h"
#include "agents/reply_template.h"
#include "envs/expert.h"
#include "envs/registry.h"
#include "envs/reply_parser.h"
#include "agents/model/qwen2_model.h"
#include "trainer/dist/distributed.h"
#include "trainer/sft/format_stage.h"
#include "trainer/rollout/episode_runner.h"
#include "trainer/sft/sft_data.h"
#include "trainer/sft/sft.h"
#include "trainer/config/train_config.h"
#include "rank_threads.h"
#include "temp_dir.h"
#include "test_util.h"
#include "train_test_util.h"

using namespace turnrl::trainer;
using turnrl::test::read_lines;
using turnrl::test::write_config;

namespace {

/** The corridor config on BabyAI goto with 2 distractors (an env with a scripted expert), the
 *  previous turn in the prompt, and `format` in place of the stage's episode count. */
std::string expert_goto_config(const std::string& root, const std::string& format) {
  std::string yaml = turnrl::test::corridor_config(root, 1);
  const std::string corridor = "corridor/short\n  options: {length: 3}";
  yaml.replace(yaml.find(corridor), corridor.size(), "babyai/goto\n  options: {num_dists: 2}");
  yaml.replace(yaml.find("history: 0"), 10, "history: 1");
  yaml.replace(yaml.find("  episodes: 100\n"), 16, format);
  return yaml;
}

}  // namespace

TEST_CASE("sft examples: one per assistant message, the prompt as the policy sees it, the reply and the end of turn") {
  const auto tokenizer = turnrl::agents::Tokenizer::load(turnrl::test::shared_path("tokenizers/qwen"));
  const turnrl::test::TempDir run_dir("turnrl_sft_examples");
  const std::string path = run_dir / "examples.jsonl";
  std::ofstream(path) << R"({"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ACTION: left"},)"
                      << R"( {"role": "user", "content": "again"}, {"role": "assistant", "content": "ACTION: right"}]})" << "\n\n"
                      << R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "assistant", "content": "x"}]})"
                      << "\n";
  const std::vector<SftExample> examples = read_sft_examples(path, tokenizer);
  REQUIRE(examples.size() == 3u);
  using M = turnrl::memory::ChatMessage;
  CHECK(examples[0].prompt == tokenizer.encode_chat({M{"user", "go"}}, true));
  CHECK(examples[1].prompt == tokenizer.encode_chat({M{"user", "go"}, M{"assistant", "ACTION: left"}, M{"user", "again"}}, true));
  std::vector<int32_t> target = tokenizer.encode("ACTION: right");
  target.push_back(tokenizer.stop_ids().front());
  CHECK(examples[1].target == target);
  CHECK(tokenizer.decode(examples[2].target) == "x<|im_end|>");

  // A past reply of weight 0 is context: it stays in the next example's prompt and is no example itself.
  std::ofstream(path) << R"({"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ACTION: left", "weight": 0},)"
                      << R"( {"role": "user", "content": "again"}, {"role": "assistant", "content": "ACTION: right", "weight": 1}]})" << "\n";
  const std::vector<SftExample> weighted = read_sft_examples(path, tokenizer);
  REQUIRE(weighted.size() == 1u);
  CHECK(weighted[0].prompt == examples[1].prompt);
  CHECK(weighted[0].target == target);
  std::ofstream(path) << R"({"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": "a", "weight": 0.5}]})" << "\n";
  CHECK_THROWS_WITH(read_sft_examples(path, tokenizer), doctest::Contains(":1: a message's weight must be 0 or 1"));
  std::ofstream(path) << R"({"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": "a", "weight": 0}]})" << "\n";
  CHECK_THROWS_WITH(read_sft_examples(path, tokenizer), doctest::Contains(":1: a transcript without an assistant message of weight 1"));
  std::ofstream(path) << R"({"messages": [{"role": "user", "content": "go"}]})" << "\n";
  CHECK_THROWS_WITH(read_sft_examples(path, tokenizer), doctest::Contains(":1: a transcript without an assistant message"));
  std::ofstream(path) << R"({"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": "a"}]})" << "\n{\"messages\": 3}\n";
  CHECK_THROWS_WITH(read_sft_examples(path, tokenizer), doctest::Contains(":2: expected"));
}

TEST_CASE("sft batches: every example once per epoch, rows of like prompt length together, order shuffled") {
  std::vector<SftExample> examples(1000);
  std::mt19937_64 lengths(7);
  for (SftExample& e : examples) e.prompt.assign(std::uniform_int_distribution<size_t>(10, 200)(lengths), 1);
  std::mt19937_64 rng(0);
  const auto first = sft_epoch_batches(examples, 16, rng);
  const auto second = sft_epoch_batches(examples, 16, rng);
  CHECK(first != second);
  for (const auto& epoch : {first, second}) {
    CHECK(epoch.size() == 63u);  // ceil(1000 / 16)
    std::vector<int> seen(examples.size(), 0);
    size_t padded = 0, useful = 0;
    for (const auto& rows : epoch) {
      CHECK(rows.size() <= 16u);
      size_t longest = 0;
      for (size_t k : rows) {
        ++seen[k];
        longest = std::max(longest, examples[k].prompt.size());
        useful += examples[k].prompt.size();
      }
      padded += longest * rows.size();
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == 1000);
    // Uniform lengths in random batches of 16 keep about 60% of a padded forward; grouped, over 90%.
    CHECK(static_cast<double>(useful) / static_cast<double>(padded) > 0.9);
  }
}

TEST_CASE("format data: training's prompts, template replies with valid actions, seeds outside evaluation") {
  const turnrl::test::TempDir run_dir("turnrl_sft_data_test");
  const std::string& root = run_dir.path();
  const TrainConfig config = TrainConfig::load(write_config("sft_data.yaml", turnrl::test::corridor_config(root, 1)));
  turnrl::agents::write_new_model("tiny", config.model.path, 0, "");
  const auto tokenizer = turnrl::agents::Tokenizer::load(config.model.path);
  SftDataSpec spec = format_data_spec(config, config.model.path, tokenizer);
  spec.episodes = 5;
  CHECK_FALSE(config.run.overlaps_training_seeds(config.run.eval_seed, config.run.eval_episodes));
  CHECK(config.run.overlaps_training_seeds(spec.first_seed, spec.episodes));  // inside the training block
  const SftDataCounts counts = write_sft_data(spec, root + "/data.jsonl");
  const size_t lines = counts.transcripts;
  CHECK(counts.turns == lines);
  const std::vector<nlohmann::json> records = read_lines(root + "/data.jsonl");
  REQUIRE(records.size() == lines);
  REQUIRE(lines >= 5u);
  // Episode 0's first prompt (lines come in the order episodes end) shows its seed's observation.
  const auto env = turnrl::envs::make_env("corridor/short", config.env.options);
  env->reset(spec.first_seed);
  const std::string first_observation = env->observe_text().long_term;
  bool seen = false;
  for (const nlohmann::json& record : records) {
    const nlohmann::json& messages = record.at("messages");
    seen = seen || messages[messages.size() - 2].at("content").get<std::string>().find(first_observation) != std::string::npos;
  }
  CHECK(seen);
  std::mt19937_64 rng(0);
  for (const nlohmann::json& record : records) {
    const nlohmann::json& reply = record.at("messages").back();
    CHECK(reply.at("role") == "assistant");
    const std::string text = reply.at("content");
    CHECK(text.rfind("ACTION: ", 0) == 0);
    CHECK(turnrl::envs::parse_reply(text, *env, turnrl::envs::ReplyFormat::kActionTag, rng).valid);
  }
}

TEST_CASE("format data from the expert with noise: random turns are played, not written; past replies are context") {
  const turnrl::test::TempDir run_dir("turnrl_sft_noise_test");
  const std::string& root = run_dir.path();
  const std::string yaml = expert_goto_config(root, "  policy: expert\n  expert_noise: 0.3\n  episodes: 100\n");
  const TrainConfig config = TrainConfig::load(write_config("sft_noise.yaml", yaml));
  turnrl::agents::write_new_model("tiny", config.model.path, 0, "");
  const auto tokenizer = turnrl::agents::Tokenizer::load(config.model.path);
  SftDataSpec spec = format_data_spec(config, config.model.path, tokenizer);
  spec.episodes = 40;
  CHECK(spec.expert_noise == doctest::Approx(0.3));
  const SftDataCounts noisy = write_sft_data(spec, root + "/noisy.jsonl");
  const double written = static_cast<double>(noisy.transcripts) / static_cast<double>(noisy.turns);
  CHECK(written == doctest::Approx(0.7).epsilon(0.15));
  spec.expert_noise = 0.0;
  const SftDataCounts clean = write_sft_data(spec, root + "/clean.jsonl");
  CHECK(clean.transcripts == clean.turns);
  CHECK(noisy.turns > clean.turns);  // noise leads the expert astray, and it takes turns to recover
  size_t past_replies = 0;
  for (const nlohmann::json& record : read_lines(root + "/noisy.jsonl")) {
    const nlohmann::json& messages = record.at("messages");
    for (size_t k = 0; k + 1 < messages.size(); ++k) {
      if (messages[k].at("role") != "assistant") continue;
      ++past_replies;
      CHECK(messages[k].at("weight") == 0);
    }
    CHECK_FALSE(messages.back().contains("weight"));
  }
  CHECK(past_replies > 0);
  spec.policy = turnrl::trainer::FormatPolicy::kRandom;
  spec.expert_noise = 0.3;
  const SftDataCounts random = write_sft_data(spec, root + "/random.jsonl");
  CHECK(random.transcripts == random.turns);  // noise applies to the expert only, and a config says so
  CHECK(random.episodes_written == 40u);
  spec.min_progression = 1.0;  // only the random walks that reach the goal
  const SftDataCounts won = write_sft_data(spec, root + "/won.jsonl");
  CHECK(won.episodes_written > 0u);
  CHECK(won.episodes_written < 40u);
  CHECK(won.transcripts < won.turns);
  CHECK(read_lines(root + "/won.jsonl").size() == won.transcripts);
  std::string random_yaml = turnrl::test::corridor_config(root, 1);
  random_yaml.replace(random_yaml.find("  episodes: 100"), 15, "  expert_noise: 0.3\n  episodes: 100");
  CHECK_THROWS_WITH(TrainConfig::load(write_config("sft_noise_random.yaml", random_yaml)), doctest::Contains("needs policy: expert"));
}

TEST_CASE("DAgger format data: the learner plays, each turn is labelled with the expert's action in the state it reached") {
  const turnrl::test::TempDir run_dir("turnrl_dagger_data_test");
  const std::string& root = run_dir.path();
  const std::string yaml = expert_goto_config(root, "  policy: expert\n  episodes: 100\n  dagger_rounds: 1\n  dagger_episodes: 8\n");
  const TrainConfig config = TrainConfig::load(write_config("dagger_data.yaml", yaml));
  CHECK(config.format.dagger_rounds == 1);
  turnrl::agents::write_new_model("tiny", config.model.path, 0, "");
  const auto tokenizer = turnrl::agents::Tokenizer::load(config.model.path);
  SftDataSpec spec = format_data_spec(config, config.model.path, tokenizer);
  spec.episodes = 12;
  // The expert as its own learner writes exactly its demonstrations.
  turnrl::agents::ExpertAgent expert_learner(spec.reply_template);
  const SftDataCounts demonstrated = write_sft_data(spec, root + "/demonstrations.jsonl");
  const SftDataCounts relabelled = write_sft_data(spec, root + "/self.jsonl", &expert_learner);
  CHECK(relabelled.transcripts == demonstrated.transcripts);
  auto sorted_lines = [](const std::string& path) {
    std::vector<std::string> lines;
    for (const nlohmann::json& line : read_lines(path)) lines.push_back(line.dump());
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  CHECK(sorted_lines(root + "/self.jsonl") == sorted_lines(root + "/demonstrations.jsonl"));
  // A random learner: replay each episode, stepping with the learner's actions (its past reply in
  // the next prompt); every label is the expert's action (with the spec's sight) in the state
  // reached, every turn labelled.
  turnrl::agents::RandomAgent random_learner(spec.reply_template);
  const turnrl::agents::ReplyTemplate reply_template(spec.reply_template);
  struct Replayed {
    size_t turns = 0, disagreements = 0, other_sight = 0;  // other_sight: labels the other expert would not give
  };
  auto replay = [&](uint64_t first_seed, uint64_t episodes) {
    const turnrl::envs::ExpertSight sight = spec.expert_sight;
    const turnrl::envs::ExpertSight other = sight == turnrl::envs::ExpertSight::kFull ? turnrl::envs::ExpertSight::kView : turnrl::envs::ExpertSight::kFull;
    Replayed replayed;
    for (uint64_t k = 0; k < episodes; ++k) {
      spec.episodes = 1;
      spec.first_seed = first_seed + k;
      const std::string path = root + "/random" + std::to_string(spec.first_seed) + ".jsonl";
      const SftDataCounts counts = write_sft_data(spec, path, &random_learner);
      CHECK(counts.transcripts == counts.turns);
      const std::vector<nlohmann::json> lines = read_lines(path);
      REQUIRE(lines.size() == counts.turns);
      const auto env = turnrl::envs::make_env(spec.tasks.front(), spec.env_options);
      env->reset(spec.first_seed);
      for (size_t t = 0; t < lines.size(); ++t) {
        const std::string label = lines[t].at("messages").back().at("content");
        const uint64_t seed = episode_turn_seed(spec.first_seed, static_cast<int>(t));
        const int expert = turnrl::envs::expert_action(*env, seed, sight);
        CHECK(label == reply_template.fill(env->actions().at(static_cast<size_t>(expert)).name));
        replayed.other_sight += turnrl::envs::expert_action(*env, seed, other) != expert;
        if (t + 1 == lines.size()) break;
        const nlohmann::json& next = lines[t + 1].at("messages");
        size_t past = next.size() - 1;  // the last assistant message before the target: the learner's reply, as history keeps it
        while (past > 0 && next[--past].at("role") != "assistant") {
        }
        REQUIRE(next[past].at("role") == "assistant");
        std::string played = next[past].at("content");
        if (played.rfind("ACTION: ", 0) == 0) played = played.substr(8);
        const auto& actions = env->actions();
        const auto it = std::find_if(actions.begin(), actions.end(), [&](const auto& a) { return a.name == played; });
        REQUIRE_MESSAGE(it != actions.end(), played);
        const int action = static_cast<int>(it - actions.begin());
        replayed.disagreements += action != expert;
        ++replayed.turns;
        env->step(action);
      }
    }
    return replayed;
  };
  const Replayed full = replay(5000, 6);
  CHECK(full.turns > 20u);
  CHECK(full.disagreements > full.turns / 3);  // the learner's own play, not the expert's
  // The view-bound expert labels where the goto target is out of view with a search, not a turn
  // towards it: the two experts' labels differ there.
  spec.expert_sight = turnrl::envs::ExpertSight::kView;
  const Replayed view = replay(5100, 6);
  CHECK(view.turns > 20u);
  CHECK(view.other_sight > 0u);
  spec.expert_sight = turnrl::envs::ExpertSight::kFull;
  spec.expert_noise = 0.2;
  CHECK_THROWS_AS(write_sft_data(spec, root + "/noisy.jsonl", &random_learner), std::invalid_argument);
  const std::string noisy = expert_goto_config(root, "  policy: expert\n  expert_noise: 0.1\n  dagger_rounds: 1\n  dagger_episodes: 8\n");
  CHECK_THROWS_WITH(TrainConfig::load(write_config("dagger_noisy.yaml", noisy)), doctest::Contains("format.dagger_rounds: needs expert_noise: 0"));
  const std::string no_episodes = expert_goto_config(root, "  policy: expert\n  dagger_rounds: 1\n");
  CHECK_THROWS_WITH(TrainConfig::load(write_config("dagger_none.yaml", no_episodes)), doctest::Contains("format.dagger_episodes: must be > 0"));
  const std::string no_passes = expert_goto_config(root, "  policy: expert\n  dagger_rounds: 1\n  dagger_episodes: 8\n  dagger_epochs: 0\n");
  CHECK_THROWS_WITH(TrainConfig::load(write_config("dagger_passes.yaml", no_passes)), doctest::Contains("format.dagger_epochs: must be > 0"));
  const std::string random_player = expert_goto_config(root, "  dagger_rounds: 1\n  dagger_episodes: 8\n");
  CHECK_THROWS_WITH(TrainConfig::load(write_config("dagger_random.yaml", random_player)), doctest::Contains("format.dagger_rounds: needs policy: expert"));
  const TrainConfig view_config = TrainConfig::load(write_config("sight_view.yaml", expert_goto_config(root, "  policy: expert\n  expert_sight: view\n")));
  CHECK(view_config.format.expert_sight == turnrl::envs::ExpertSight::kView);
  CHECK(format_data_spec(view_config, config.model.path, tokenizer).expert_sight == turnrl::envs::ExpertSight::kView);
  const std::string bad_sight = expert_goto_config(root, "  policy: expert\n  expert_sight: partial\n");
  CHECK_THROWS_WITH(TrainConfig::load(write_config("sight_bad.yaml", bad_sight)), doctest::Contains("format.expert_sight: must be full or view"));
  const std::string random_view = expert_goto_config(root, "  expert_sight: view\n");
  CHECK_THROWS_WITH(TrainConfig::load(write_config("sight_random.yaml", random_view)), doctest::Contains("format.expert_sight: needs policy: expert"));
  auto with_aim = [](std::string yaml) { return yaml.replace(yaml.find("'ACTION: {action}'"), 18, "'{aim} ACTION: {action}'"); };
  const std::string random_aim = with_aim(expert_goto_config(root, ""));
  CHECK_THROWS_WITH(TrainConfig::load(write_config("aim_random.yaml", random_aim)), doctest::Contains("format.reply_template: {aim} needs policy: expert"));
  const std::string expert_aim = with_aim(expert_goto_config(root, "  policy: expert\n"));
  const TrainConfig aim_config = TrainConfig::load(write_config("aim_expert.yaml", expert_aim));
  CHECK(aim_config.format.reply_template == "{aim} ACTION: {action}");
  SftDataSpec random_aim_spec = format_data_spec(aim_config, config.model.path, tokenizer);
  random_aim_spec.policy = turnrl::trainer::FormatPolicy::kRandom;  // past the config's check
  CHECK_THROWS_WITH(write_sft_data(random_aim_spec, root + "/random_aim.jsonl"), doctest::Contains("{aim} needs policy expert"));
}

TEST_CASE("DAgger leaves out the turns where the expert could only guess") {
  const turnrl::test::TempDir run_dir("turnrl_dagger_guess_test");
  const std::string& root = run_dir.path();
  const TrainConfig config = TrainConfig::load(write_config("dagger_guess.yaml", expert_goto_config(root, "  policy: expert\n  episodes: 100\n")));
  turnrl::agents::write_new_model("tiny", config.model.path, 0, "");
  const auto tokenizer = turnrl::agents::Tokenizer::load(config.model.path);
  SftDataSpec spec = format_data_spec(config, config.model.path, tokenizer);
  // A random learner on a level whose win rule must be made pushes rule blocks where no way on is left.
  spec.tasks = {"babaisai/make_win"};
  spec.env_options = nlohmann::json::object();
  spec.episodes = 4;
  turnrl::agents::RandomAgent random_learner(spec.reply_template);
  const SftDataCounts counts = write_sft_data(spec, root + "/labels.jsonl", &random_learner);
  CHECK(counts.guesses > 0u);
  CHECK(counts.transcripts > counts.guesses);
  CHECK(counts.transcripts + counts.guesses == counts.turns);
  CHECK(read_lines(root + "/labels.jsonl").size() == counts.transcripts);
}

TEST_CASE("a run draws its new base model with model.initializer_range and refuses a folder drawn otherwise") {
  const turnrl::test::TempDir run_dir("turnrl_initializer_range_run");
  const std::string& root = run_dir.path();
  std::string yaml = turnrl::test::corridor_config(root, 1);
  yaml.replace(yaml.find("  preset: tiny\n"), 15, "  preset: tiny\n  initializer_range: 0.125\n");
  TrainConfig config = TrainConfig::load(write_config("initializer_range.yaml", yaml));
  REQUIRE(config.model.initializer_range == 0.125);
  CHECK(TrainConfig::load(write_config("initializer_range_again.yaml", config.to_yaml())).model.initializer_range == 0.125);
  config.format.model.clear();  // the base model alone
  CHECK(prepare_initial_model(config) == root + "/base");
  CHECK(turnrl::agents::ModelConfig::load(root + "/base/config.json").initializer_range == 0.125);
  CHECK_NOTHROW(prepare_initial_model(config));  // the folder it drew is reused
  config.model.initializer_range = 0.05;
  CHECK_THROWS_WITH_AS(prepare_initial_model(config), doctest::Contains("drawn with initializer_range 0.125, not the config's 0.05"),
                       std::invalid_argument);
  config.model.initializer_range = 0.0;  // the preset's: no demand on a folder that exists
  CHECK_NOTHROW(prepare_initial_model(config));
}

TEST_CASE("a format stage with DAgger rounds: the model plays, the expert's labels fine-tune it, every round's data kept") {
  const turnrl::test::TempDir run_dir("turnrl_dagger_stage_test");
  const std::string& root = run_dir.path();
  const std::string yaml =
      expert_goto_config(root, "  policy: expert\n  episodes: 20\n  dagger_rounds: 2\n  dagger_episodes: 3\n  dagger_epochs: 2\n"
                               "  final_lr_schedule: cosine\n");
  const TrainConfig config = TrainConfig::load(write_config("dagger_stage.yaml", yaml));
  REQUIRE(config.format.dagger_rounds == 2);
  REQUIRE(config.format.dagger_epochs != config.format.epochs);
  CHECK(prepare_initial_model(config) == root + "/format");
  for (const char* file : {"config.json", "model.safetensors", "sft_data.jsonl", "dagger1.jsonl", "dagger2.jsonl", "sft_metrics.jsonl",
                           "round0_sft_metrics.jsonl", "round1_sft_metrics.jsonl"}) {
    INFO(file);
    CHECK(std::filesystem::exists(root + "/format/" + std::string(file)));
  }
  CHECK_FALSE(std::filesystem::exists(root + "/format.tmp"));
  CHECK_FALSE(std::filesystem::exists(root + "/format.tmp.learner"));
  // Each round fine-tuned on the aggregate, the demonstrations and every round's labels so far:
  // one step per batch of them and pass (`dagger_epochs`; the demonstrations alone: `epochs`).
  size_t aggregate = read_lines(root + "/format/sft_data.jsonl").size();
  const std::vector<nlohmann::json> demonstration_steps = read_lines(root + "/format/round0_sft_metrics.jsonl");
  CHECK(demonstration_steps.size() == static_cast<size_t>(config.format.epochs) * ((aggregate + 31) / 32));
  for (const nlohmann::json& step : demonstration_steps) CHECK(step.at("lr").get<double>() == doctest::Approx(config.format.lr));
  for (int round = 1; round <= 2; ++round) {
    const size_t labels = read_lines(root + "/format/dagger" + std::to_string(round) + ".jsonl").size();
    aggregate += labels;
    const std::string metrics = round == 2 ? "sft_metrics.jsonl" : "round1_sft_metrics.jsonl";
    INFO("round " << round << ": " << labels << " labels, " << aggregate << " examples");
    CHECK(labels >= 3u);
    const std::vector<nlohmann::json> steps = read_lines(root + "/format/" + metrics);
    CHECK(steps.size() == static_cast<size_t>(config.format.dagger_epochs) * ((aggregate + 31) / 32));
    // `final_lr_schedule: cosine` anneals the last round's pass alone; the others keep `lr`.
    REQUIRE(steps.size() >= 2u);
    CHECK(steps.front().at("lr").get<double>() == doctest::Approx(config.format.lr));
    if (round == 2) CHECK(steps.back().at("lr").get<double>() < 0.5 * config.format.lr);
    else CHECK(steps.back().at("lr").get<double>() == doctest::Approx(config.format.lr));
  }
  CHECK_FALSE(std::filesystem::exists(root + "/format/aggregate.jsonl"));
  CHECK(turnrl::agents::LanguageModel::load(root + "/format") != nullptr);
}

TEST_CASE("two ranks play their shares of the format data and fine-tune as one process does on the whole batch") {
  const turnrl::test::TempDir run_dir("turnrl_sft_ranks_test");
  const std::string& root = run_dir.path();
  const TrainConfig config = TrainConfig::load(write_config("sft_ranks.yaml", expert_goto_config(root, "  policy: expert\n  episodes: 30\n")));
  turnrl::agents::write_new_model("tiny", config.model.path, 0, "");
  const auto tokenizer = turnrl::agents::Tokenizer::load(config.model.path);
  SftDataSpec spec = format_data_spec(config, config.model.path, tokenizer);
  write_sft_data(spec, root + "/all.jsonl");
  const std::vector<nlohmann::json> lines = read_lines(root + "/all.jsonl");
  const std::multiset<nlohmann::json> alone(lines.begin(), lines.end());
  std::multiset<nlohmann::json> shared;
  spec.ranks = 2;
  for (spec.rank = 0; spec.rank < 2; ++spec.rank) {
    const std::string share = root + "/share" + std::to_string(spec.rank) + ".jsonl";
    write_sft_data(spec, share);
    const std::vector<nlohmann::json> share_lines = read_lines(share);
    CHECK(!share_lines.empty());
    CHECK(share_lines.size() < alone.size());
    shared.insert(share_lines.begin(), share_lines.end());
  }
  CHECK(shared == alone);
  spec.rank = 2;
  CHECK_THROWS_AS(write_sft_data(spec, root + "/bad.jsonl"), std::invalid_argument);

  // 7k + 1 examples in batches of 7: the last batch has one row, and rank 1 none of it.
  REQUIRE(lines.size() >= 50u);
  {
    std::ofstream data(root + "/data.jsonl");
    for (size_t k = 0; k < (lines.size() - 1) / 7 * 7 + 1; ++k) data << lines[k].dump() << "\n";
  }
  SftSettings settings;
  settings.epochs = 2;
  settings.lr = 3e-3;
  settings.batch_size = 7;
  settings.seed = 3;
  run_sft({root + "/data.jsonl"}, config.model.path, root + "/alone", settings);
  turnrl::test::run_as_ranks(2, [&](const std::shared_ptr<ProcessGroup>& group) {
    run_sft({root + "/data.jsonl"}, config.model.path, root + "/ranks", settings, group.get());
  });
  const std::vector<nlohmann::json> alone_loss = read_lines(root + "/alone/sft_metrics.jsonl");
  const std::vector<nlohmann::json> ranks_loss = read_lines(root + "/ranks/sft_metrics.jsonl");
  REQUIRE(alone_loss.size() == ranks_loss.size());
  for (size_t k = 0; k < alone_loss.size(); ++k) {
    INFO("step " << k + 1);
    CHECK(ranks_loss[k].at("loss").get<double>() == doctest::Approx(alone_loss[k].at("loss").get<double>()).epsilon(1e-4));
  }
  auto base = turnrl::agents::load_qwen2(config.model.path, false, torch::kCPU);
  auto one = turnrl::agents::load_qwen2(root + "/alone", false, torch::kCPU);
  auto two = turnrl::agents::load_qwen2(root + "/ranks", false, torch::kCPU);
  double moved = 0, apart = 0;
  for (const auto& item : one->named_parameters()) {
    moved = std::max(moved, (item.value() - base->named_parameters()[item.key()]).abs().max().item<double>());
    apart = std::max(apart, (item.value() - two->named_parameters()[item.key()]).abs().max().item<double>());
  }
  MESSAGE("fine-tuning moved the weights by up to " << moved << "; two ranks against one process: " << apart);
  CHECK(moved > 1e-2);
  CHECK(apart < 1e-4);
}

TEST_CASE("two ranks make a format stage with a DAgger round together, each playing its share") {
  const turnrl::test::TempDir run_dir("turnrl_dagger_ranks_test");
  const std::string& root = run_dir.path();
  const TrainConfig config = TrainConfig::load(
      write_config("dagger_ranks.yaml", expert_goto_config(root, "  policy: expert\n  episodes: 20\n  dagger_rounds: 1\n  dagger_episodes: 4\n")));
  turnrl::test::run_as_ranks(2, [&](const std::shared_ptr<ProcessGroup>& group) {
    CHECK(prepare_initial_model(config, group.get()) == root + "/format");
  });
  const std::string stage = root + "/format/";
  size_t demonstrations = 0, labels = 0;
  for (const std::string suffix : {"", ".rank1"}) {
    const size_t shown = read_lines(stage + "sft_data" + suffix + ".jsonl").size(), labelled = read_lines(stage + "dagger1" + suffix + ".jsonl").size();
    INFO("rank file '" << suffix << "': " << shown << " demonstrations, " << labelled << " labels");
    CHECK(shown > 0u);
    CHECK(labelled > 0u);  // 2 of the round's 4 episodes each
    demonstrations += shown;
    labels += labelled;
  }
  // Each fine-tuning took one step per batch of all ranks' files.
  CHECK(read_lines(stage + "round0_sft_metrics.jsonl").size() == static_cast<size_t>(config.format.epochs) * ((demonstrations + 31) / 32));
  CHECK(read_lines(stage + "sft_metrics.jsonl").size() ==
        static_cast<size_t>(config.format.dagger_epochs) * ((demonstrations + labels + 31) / 32));
  CHECK_FALSE(std::filesystem::exists(root + "/format.tmp"));
  CHECK_FALSE(std::filesystem::exists(root + "/format.tmp.learner"));
  CHECK(turnrl::agents::LanguageModel::load(root + "/format") != nullptr);
  // The stage is made: ranks of a later run reuse it.
  const auto made = std::filesystem::last_write_time(stage + "model.safetensors");
  turnrl::test::run_as_ranks(2, [&](const std::shared_ptr<ProcessGroup>& group) { prepare_initial_model(config, group.get()); });
  CHECK(std::filesystem::last_write_time(stage + "model.safetensors") == made);
}

TEST_CASE("a cosine schedule takes the supervised rate from lr down to 0 over the run") {
  const turnrl::test::TempDir run_dir("turnrl_sft_schedule_test");
  const std::string& root = run_dir.path();
  turnrl::agents::write_new_model("tiny", root + "/base", 0, "");
  {
    std::ofstream data(root + "/data.jsonl");
    for (int k = 0; k < 40; ++k) {
      data << nlohmann::json{{"messages", {{{"role", "user"}, {"content", "go " + std::to_string(k % 4)}},
                                           {{"role", "assistant"}, {"content", k % 2 ? "ACTION: go left" : "ACTION: go right"}}}}}
                  .dump()
           << "\n";
    }
  }
  SftSettings settings;
  settings.epochs = 2;
  settings.batch_size = 8;
  settings.lr = 2e-3;
  settings.lr_schedule = turnrl::trainer::LrSchedule::kCosine;
  run_sft({root + "/data.jsonl"}, root + "/base", root + "/tuned", settings);
  // The optimizer's rate at each step, as the metrics record it.
  const std::vector<nlohmann::json> steps = read_lines(root + "/tuned/sft_metrics.jsonl");
  REQUIRE(steps.size() == 10u);
  CHECK(steps.front().at("lr").get<double>() == doctest::Approx(2e-3));
  for (size_t k = 1; k < steps.size(); ++k) CHECK(steps[k].at("lr").get<double>() < steps[k - 1].at("lr").get<double>());
  CHECK(steps.back().at("lr").get<double>() < 1e-4);
  const std::string bad = expert_goto_config(root, "  episodes: 20\n  lr_schedule: linear\n");
  CHECK_THROWS_WITH(TrainConfig::load(write_config("schedule_bad.yaml", bad)), doctest::Contains("format.lr_schedule: must be constant or cosine"));
  const std::string good = expert_goto_config(root, "  episodes: 20\n  lr_schedule: cosine\n");
  CHECK(TrainConfig::load(write_config("schedule_good.yaml", good)).format.lr_schedule == turnrl::trainer::LrSchedule::kCosine);
  const std::string bad_final = expert_goto_config(root, "  episodes: 20\n  final_lr_schedule: step\n");
  CHECK_THROWS_WITH(TrainConfig::load(write_config("final_schedule_bad.yaml", bad_final)),
                    doctest::Contains("format.final_lr_schedule: must be constant or cosine"));
  // A run's config.yaml (to_yaml) keeps the setting, so `eval --run` and a resume read it back.
  const TrainConfig final_cosine =
      TrainConfig::load(write_config("final_schedule_good.yaml", expert_goto_config(root, "  episodes: 20\n  final_lr_schedule: cosine\n")));
  CHECK(final_cosine.format.final_lr_schedule == turnrl::trainer::LrSchedule::kCosine);
  CHECK(TrainConfig::load(write_config("final_schedule_again.yaml", final_cosine.to_yaml())).format.final_lr_schedule == turnrl::trainer::LrSchedule::kCosine);
}

TEST_CASE("the tiny preset learns replies that depend on action words in the observation") {
  // "left" and "right" are reply tokens and observation words alike. With the output head tied to
  // the input embeddings, fine-tuning on replies makes their rows nearly parallel: the model cannot
  // learn this rule (it prefers one action for all 8 observations), and PPO after a format stage
  // cannot learn the corridor (the next test).
  const turnrl::test::TempDir run_dir("turnrl_reads_test");
  const std::string& root = run_dir.path();
  turnrl::agents::write_new_model("tiny", root + "/base", 0, "");
  const std::vector<std::string> actions = {"go left", "go right", "wait"};
  auto observation = [](int distance, bool left) {
    return "Current Observation:\nThe exit is " + std::to_string(distance) + (distance == 1 ? " step" : " steps") + " to the " +
           (left ? "left." : "right.");
  };
  auto rule = [](bool left) { return left ? std::string("go right") : std::string("go left"); };  // the mirror: not a copy
  {
    // Half of the replies follow the rule, half are random, as in format data with a signal.
    std::ofstream data(root + "/data.jsonl");
    std::mt19937_64 rng(0);
    for (int k = 0; k < 480; ++k) {
      const int distance = 1 + k % 4;
      const bool left = (k / 4) % 2 == 0;
      const std::string action = k % 16 < 8 ? rule(left) : actions[std::uniform_int_distribution<size_t>(0, 2)(rng)];
      data << nlohmann::json{{"messages", {{{"role", "user"}, {"content", "reach the exit"}},
                                           {{"role", "user"}, {"content", observation(distance, left)}},
                                           {{"role", "assistant"}, {"content", "ACTION: " + action}}}}}
                  .dump()
           << "\n";
    }
  }
  SftSettings settings;
  settings.epochs = 4;
  settings.lr = 3e-3;
  settings.batch_size = 32;
  run_sft({root + "/data.jsonl"}, root + "/base", root + "/tuned", settings);
  const auto model = turnrl::agents::LanguageModel::load(root + "/tuned");
  const turnrl::agents::Tokenizer& tokenizer = model->tokenizer();
  for (int distance = 1; distance <= 4; ++distance) {
    for (const bool left : {true, false}) {
      const std::vector<int32_t> prompt =
          tokenizer.encode_chat({{"user", "reach the exit"}, {"user", observation(distance, left)}}, true);
      std::string best;
      double best_logprob = -1e30;
      for (const std::string& action : actions) {
        std::vector<int32_t> reply = tokenizer.encode("ACTION: " + action);
        reply.push_back(tokenizer.stop_ids().front());
        const std::vector<std::vector<float>> scores = model->score({prompt}, {reply});
        double logprob = 0;
        for (float x : scores.front()) logprob += x;
        if (logprob > best_logprob) best_logprob = logprob, best = action;
      }
      INFO(observation(distance, left));
      CHECK(best == rule(left));
    }
  }
}
