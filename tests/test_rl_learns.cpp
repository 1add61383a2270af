// Reinforcement learning does work cloning cannot: on the corridor, the format stage clones random
// actions (keyed on the observation, so the model learns to read it), and the format model alone
// does not solve the task; PPO must. Breaking the update (no actor step, or the advantages' sign
// flipped) fails this test.
#include "torch_doctest.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/config/train_config.h"
#include "trainer/run/ppo_trainer.h"
#include "trainer/sft/format_stage.h"
#include "temp_dir.h"
#include "train_test_util.h"

using namespace turnrl::trainer;

TEST_CASE("PPO solves the corridor, which the format model alone does not, with multi-token free-form replies") {
  const turnrl::test::TempDir run_dir("turnrl_rl_learns_test");
  const std::string& root = run_dir.path();
  const std::string config_path = turnrl::test::write_config("rl_learns.yaml", turnrl::test::corridor_config(root, 15));
  PpoTrainer(TrainConfig::load(config_path), "").train();
  // The stage made its model once, with a falling loss.
  const std::vector<nlohmann::json> sft = turnrl::test::read_lines(root + "/format/sft_metrics.jsonl");
  REQUIRE(sft.size() >= 4u);
  CHECK(sft.back().at("loss").get<double>() < 0.5 * sft.front().at("loss").get<double>());
  const std::vector<nlohmann::json> evals = turnrl::test::metrics_of_type(root + "/run/metrics.jsonl", "eval");
  const std::vector<nlohmann::json> train = turnrl::test::metrics_of_type(root + "/run/metrics.jsonl", "train");
  REQUIRE(evals.size() == 2u);
  REQUIRE(!train.empty());
  CHECK(evals.back().at("decoding") == "greedy");
  const double before = evals.front().at("success"), after = evals.back().at("success");
  INFO("greedy success of the format model " << before << ", after PPO " << after);
  CHECK(before <= 0.5);  // cloning random actions does not solve it
  CHECK(after >= 0.9);
  // The format survives PPO: invalid replies sampled at temperature 1 over the last 5 iterations
  // (256 turns each, so about 1.4 points of noise an iteration at 5%) stay well under the 20-30%
  // of the early iterations while the policy moves. The median: now and then one large update
  // sends a single iteration to about 30%, and the next is back at 5%.
  REQUIRE(train.size() >= 5u);
  std::vector<double> late_invalid;
  for (size_t k = train.size() - 5; k < train.size(); ++k) late_invalid.push_back(train[k].at("invalid_rate").get<double>());
  std::nth_element(late_invalid.begin(), late_invalid.begin() + 2, late_invalid.end());
  CHECK(late_invalid[2] < 0.1);
  CHECK(train.back().at("reply_tokens").get<double>() >= 4.0);  // "ACTION", ":", "go", side, end of turn
  // A second run reuses the stage's model instead of making it again.
  const auto made = std::filesystem::last_write_time(root + "/format/model.safetensors");
  CHECK(prepare_initial_model(TrainConfig::load(config_path)) == root + "/format");
  CHECK(std::filesystem::last_write_time(root + "/format/model.safetensors") == made);
}
