// The format stage: format data in training's prompts (make-sft-data) and supervised fine-tuning
// on it (sft).
#include "torch_doctest.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "agents/model/language_model.h"
#include "agents/model/model_presets.h"
#include "agents/model/tokenizer.h"
#include "envs/registry.h"
#include "envs/reply_parser.h"
#include "trainer/format_stage.h"
#include "trainer/rollout/sft_data.h"
#include "trainer/sft.h"
#include "trainer/train_config.h"
#include "test_util.h"
#include "train_test_util.h"

using namespace turnrl::trainer;
using turnrl::test::write_config;

namespace {

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string text; std::getline(in, text);) lines.push_back(nlohmann::json::parse(text));
  return lines;
}

/** The corridor with free-form replies after a format stage. */
std::string corridor_config(const std::string& root, int iterations) {
  return "model:\n  path: " + root + "/base\n  preset: tiny\n  threads: 2\n"
         "format:\n  model: " + root + "/format\n  reply_template: 'ACTION: {action}'\n  episodes: 60\n  epochs: 4\n"
         "  lr: 3.0e-3\n  batch_size: 32\n"
         "env:\n  id: corridor/short\n  n_env: 16\n  e_len: 8\n"
         "turn:\n  layout: compact\n  history: 0\n  reply_format: action-tag\n  history_entry: action\n"
         "  invalid_penalty: -0.1\n  binary_reward: true\n"
         "sampling:\n  max_response_tokens: 6\n  action_tokens_only: false\n"
         "ppo:\n  actor_lr: 1.0e-3\n  critic_lr: 2.0e-3\n  epochs: 4\n  minibatch: 64\n  kl_coef: 0.001\n  entropy_coef: 0.0\n"
         "  step_gamma: 0.9\n  token_gamma: 1.0\n  token_lambda: 1.0\n  critic_warmup_iterations: 1\n"
         "run:\n  iterations: " + std::to_string(iterations) + "\n  eval_every: 100\n  eval_episodes: 40\n  checkpoint_every: 100\n"
         "  out: " + root + "/run\n";
}

}  // namespace

TEST_CASE("sft examples: one per assistant message, the prompt as the policy sees it, the reply and the end of turn") {
  const auto tokenizer = turnrl::agents::Tokenizer::load(turnrl::test::shared_path("tokenizers/qwen"));
  const std::string path = "/tmp/turnrl_sft_examples.jsonl";
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

  std::ofstream(path) << R"({"messages": [{"role": "user", "content": "go"}]})" << "\n";
  CHECK_THROWS_WITH(read_sft_examples(path, tokenizer), doctest::Contains(":1: a transcript without an assistant message"));
  std::ofstream(path) << R"({"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": "a"}]})" << "\n{\"messages\": 3}\n";
  CHECK_THROWS_WITH(read_sft_examples(path, tokenizer), doctest::Contains(":2: expected"));
}

TEST_CASE("format data: training's prompts, template replies with valid actions, seeds outside evaluation") {
  const std::string root = "/tmp/turnrl_sft_data_test";
  std::filesystem::remove_all(root);
  const TrainConfig config = TrainConfig::load(write_config("sft_data.yaml", corridor_config(root, 1)));
  turnrl::agents::write_new_model("tiny", config.model.path, 0, "");
  const auto tokenizer = turnrl::agents::Tokenizer::load(config.model.path);
  SftDataSpec spec = format_data_spec(config, config.model.path, tokenizer);
  spec.episodes = 5;
  CHECK_FALSE(config.run.overlaps_training_seeds(config.run.eval_seed, config.run.eval_episodes));
  CHECK(config.run.overlaps_training_seeds(spec.first_seed, spec.episodes));  // inside the training block
  const size_t lines = write_sft_data(spec, root + "/data.jsonl");
  const std::vector<nlohmann::json> records = read_lines(root + "/data.jsonl");
  REQUIRE(records.size() == lines);
  REQUIRE(lines >= 5u);
  // Episode 0's first prompt (lines come in the order episodes end) shows its seed's observation.
  const auto env = turnrl::envs::make_env("corridor/short");
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
