// Training-free process rewards on real models: V(prefix) from the batched, padded scoring path
// against a direct forward pass of each unpadded sequence, and the scorer's rows (U_i on the
// segments' last tokens) against values computed by hand from those direct passes.
#include "torch_doctest.h"

#include <filesystem>

#include <unistd.h>

#include "agents/model/language_model.h"
#include "agents/model/new_model.h"
#include "agents/model/qwen2_model.h"
#include "test_util.h"
#include "trainer/rewards/process_scorer.h"

using namespace turnrl;
using doctest::Approx;

namespace {

/** V(prefix) the direct way: one unpadded sequence, log-softmax over the (allowed) vocabulary. */
double direct_value(agents::Qwen2Model& model, const std::vector<int32_t>& context, const std::vector<int32_t>& answer,
                    const std::vector<int32_t>& allowed = {}) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> ids(context.begin(), context.end());
  ids.insert(ids.end(), answer.begin(), answer.end());
  const int64_t length = static_cast<int64_t>(ids.size());
  const torch::Tensor input = torch::tensor(ids, torch::kInt64).view({1, length});
  const torch::Tensor positions = torch::arange(length, torch::kInt64).view({1, length});
  const torch::Tensor mask = torch::ones({1, length}, torch::kBool);
  torch::Tensor logits = model->logits(model->forward(input, positions, mask))[0];
  if (!allowed.empty()) {
    torch::Tensor blocked = torch::ones({logits.size(-1)}, torch::kBool);
    for (int32_t token : allowed) blocked[token] = false;
    logits = logits.masked_fill(blocked, -INFINITY);
  }
  const torch::Tensor logp = torch::log_softmax(logits, -1);
  double sum = 0.0;
  for (size_t i = 0; i < answer.size(); ++i) {
    sum += logp[static_cast<int64_t>(context.size() + i - 1)][answer[i]].item<double>();
  }
  return sum / static_cast<double>(answer.size());
}

std::string shared_model(const char* name) { return test::shared_path(std::string("models/") + name); }

}  // namespace

TEST_CASE("V(prefix) on a tiny model folder equals a direct forward pass, batched and padded or not") {
  torch::set_num_threads(1);
  auto model = agents::LanguageModel::load(shared_model("tiny-qwen2-tied"));
  agents::Qwen2Model direct = agents::load_qwen2(shared_model("tiny-qwen2-tied"), false, torch::kCPU);
  // Contexts of different lengths, so that the batch pads them; answers of one to three tokens.
  const std::vector<std::vector<int32_t>> contexts = {{1, 2, 3, 4, 5}, {1, 2, 3}, {7, 8, 9, 10, 11, 12, 13}, {300}};
  const std::vector<std::vector<int32_t>> answers = {{20, 21}, {20, 21}, {30}, {40, 41, 42}};
  for (const std::vector<int32_t>& allowed : {std::vector<int32_t>{}, std::vector<int32_t>{5, 20, 21, 30, 40, 41, 42, 99}}) {
    for (size_t batch : {size_t{1}, size_t{3}, size_t{64}}) {
      CAPTURE(batch);
      CAPTURE(allowed.size());
      const std::vector<double> values = trainer::prefix_values(*model, contexts, answers, allowed, batch);
      REQUIRE(values.size() == contexts.size());
      for (size_t j = 0; j < contexts.size(); ++j) {
        CAPTURE(j);
        const double expected = direct_value(direct, contexts[j], answers[j], allowed);
        CHECK(expected < 0.0);
        CHECK(values[j] == Approx(expected).epsilon(1e-5).scale(1.0));
      }
    }
  }
  CHECK_THROWS_AS(trainer::prefix_values(*model, {{1}}, {{}}, {}, 4), std::invalid_argument);
  CHECK_THROWS_AS(trainer::prefix_values(*model, {{1}}, {{2}, {3}}, {}, 4), std::invalid_argument);
}

TEST_CASE("the process scorer puts U_i = V(prefix_i) - V(prefix_i-1) on each segment's last token") {
  torch::set_num_threads(1);
  const std::string dir = std::filesystem::temp_directory_path() / ("turnrl_test_process_" + std::to_string(::getpid()));
  agents::write_new_model("tiny", dir, 3, "");
  std::shared_ptr<agents::LanguageModel> policy = agents::LanguageModel::load(dir);
  agents::Qwen2Model direct = agents::load_qwen2(dir, false, torch::kCPU);
  const agents::Tokenizer& tokenizer = policy->tokenizer();

  trainer::rewards::ProcessRewardConfig config;
  config.segmentation.markers = {"So "};
  config.answer_prompt = "Action";
  config.batch_prefixes = 2;
  trainer::ProcessRewardScorer scorer(policy, config, {});

  trainer::ScoringSample sample;
  sample.rows = {0, 4};
  trainer::TurnRecord reasoned;
  reasoned.prompt_ids = tokenizer.encode("Problem : Start with 7 , add 5 .");
  // Tokens: So(0) 12(1) .(2) | So(3) 12(4) Action(5) 12(6) <|im_end|>(7): segments end at 2 and 7.
  reasoned.response_ids = tokenizer.encode("So 12 . So 12 Action 12<|im_end|>");
  REQUIRE(reasoned.response_ids.size() == 8);
  reasoned.reference_answer = "12";
  trainer::TurnRecord unanswered = reasoned;  // an env without a reference answer
  unanswered.reference_answer.clear();
  sample.turns = {reasoned, unanswered};

  const std::vector<trainer::SampleScores> scores = scorer.score({&sample});
  REQUIRE(scores.size() == 1);
  REQUIRE(scores[0].size() == 2);
  const std::vector<int32_t> force = tokenizer.encode("Action"), answer = tokenizer.encode("12");
  REQUIRE(force.size() == 1);
  REQUIRE(answer.size() == 1);
  auto context = [&](size_t reply_tokens) {
    std::vector<int32_t> ids = reasoned.prompt_ids;
    ids.insert(ids.end(), reasoned.response_ids.begin(), reasoned.response_ids.begin() + static_cast<long>(reply_tokens));
    ids.insert(ids.end(), force.begin(), force.end());
    return ids;
  };
  // The empty prefix, the first segment (3 tokens), the whole reply without its stop token (7).
  const double v0 = direct_value(direct, context(0), answer), v1 = direct_value(direct, context(3), answer),
               v2 = direct_value(direct, context(7), answer);
  const std::vector<float>& row = scores[0][0];
  REQUIRE(row.size() == 8);
  for (size_t k : {0, 1, 3, 4, 5, 6}) CHECK(row[k] == 0.0f);
  CHECK(row[2] == Approx(v1 - v0).epsilon(1e-4).scale(1.0));
  CHECK(row[7] == Approx(v2 - v1).epsilon(1e-4).scale(1.0));
  CHECK(row[2] != 0.0f);
  CHECK(scores[0][1] == std::vector<float>(8, 0.0f));
  std::filesystem::remove_all(dir);
}
