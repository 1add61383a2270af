// Reward math against hand-computed tables: the episode and env reward managers, reply
// segmentation, marginal utilities, GiGPO's episode and step advantages, dynamic sampling.
// Every expected number is derived by hand in the comment above it.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "trainer/rewards/dynamic_sampling.h"
#include "trainer/rewards/episode_reward_manager.h"
#include "trainer/rewards/gigpo.h"
#include "trainer/rewards/process_reward.h"
#include "trainer/rewards/reward_manager.h"
#include "trainer/rewards/segmentation.h"

using namespace turnrl::trainer::rewards;
using doctest::Approx;

namespace {

CollectedTurn turn(uint64_t episode, double reward, size_t tokens, bool ended) {
  CollectedTurn t;
  t.episode_id = episode;
  t.env_reward = reward;
  t.response_tokens = tokens;
  t.episode_ended = ended;
  return t;
}

/** Episode 7 runs two turns around episode 8's single turn. */
std::vector<CollectedTurn> interleaved_collection() {
  return {turn(7, 0.5, 3, false), turn(8, 1.0, 2, true), turn(7, 0.25, 2, true)};
}

}  // namespace

TEST_CASE("episode reward manager: the episode's sum on the last token of its final turn") {
  // Episode 7: 0.5 + 0.25 = 0.75 on turn 3's last token; episode 8: 1.0 on its only turn.
  auto manager = make_reward_manager("episode", false);
  const TurnTokenRewards rewards = manager->assign(interleaved_collection());
  CHECK(rewards == TurnTokenRewards{{0.0f, 0.0f, 0.0f}, {0.0f, 1.0f}, {0.0f, 0.75f}});
}

TEST_CASE("episode reward manager with normalize_by_length divides by the episode's turn count") {
  // Episode 7: 0.75 / 2 turns = 0.375; episode 8: 1.0 / 1 turn = 1.0.
  auto manager = make_reward_manager("episode", true);
  const TurnTokenRewards rewards = manager->assign(interleaved_collection());
  CHECK(rewards == TurnTokenRewards{{0.0f, 0.0f, 0.0f}, {0.0f, 1.0f}, {0.0f, 0.375f}});
}

TEST_CASE("env reward manager: each turn's own reward on its last token") {
  auto manager = make_reward_manager("env", false);
  const TurnTokenRewards rewards = manager->assign(interleaved_collection());
  CHECK(rewards == TurnTokenRewards{{0.0f, 0.0f, 0.5f}, {0.0f, 1.0f}, {0.0f, 0.25f}});
  CHECK(manager->state() == nlohmann::json::object());
  CHECK_THROWS_AS(make_reward_manager("outcome", false), std::invalid_argument);
}

TEST_CASE("attached scores (the rm_scores bypass) are used as they are") {
  // Episode 9: a scored first turn keeps [0.1, 0.2]; its env reward 1 still counts, so the final
  // turn gets 1 + 2 = 3. Episode 10 ends on a scored turn: [0, 0.7] stands, its env reward 5 is
  // written nowhere.
  std::vector<CollectedTurn> turns = {turn(9, 1.0, 2, false), turn(9, 2.0, 1, true), turn(10, 5.0, 2, true)};
  turns[0].scores = std::vector<float>{0.1f, 0.2f};
  turns[2].scores = std::vector<float>{0.0f, 0.7f};
  for (const char* name : {"episode", "env"}) {
    CAPTURE(name);
    auto manager = make_reward_manager(name, false);
    const TurnTokenRewards rewards = manager->assign(turns);
    CHECK(rewards[0] == std::vector<float>{0.1f, 0.2f});
    CHECK(rewards[2] == std::vector<float>{0.0f, 0.7f});
  }
  CHECK(make_reward_manager("episode", false)->assign(turns)[1] == std::vector<float>{3.0f});
  CHECK(make_reward_manager("env", false)->assign(turns)[1] == std::vector<float>{2.0f});
  turns[0].scores = std::vector<float>{0.1f};  // one score for two tokens
  CHECK_THROWS_AS(make_reward_manager("episode", false)->assign(turns), std::invalid_argument);
}

TEST_CASE("an episode cut by the collection window keeps its partial sum, through a checkpoint") {
  // Collection 1: episode 3 earns 0.5 (1 turn), episode 4 earns 0 (1 turn); neither ends.
  // Collection 2: episode 4 ends with 1 -> sum 1 over 2 turns = 0.5; episode 3 earns 1.5 (2 turns).
  // Collection 3: episode 3 ends with -1 -> sum 0.5 + 1.5 - 1 = 1 over 3 turns = 1/3.
  EpisodeRewardManager first(true);
  CHECK(first.assign({turn(3, 0.5, 2, false), turn(4, 0.0, 1, false)}) == TurnTokenRewards{{0.0f, 0.0f}, {0.0f}});
  const nlohmann::json saved = nlohmann::json::parse(first.state().dump());
  CHECK(saved == nlohmann::json::parse(R"({"open_episodes": [{"episode_id": 3, "reward_sum": 0.5, "turns": 1},
                                                             {"episode_id": 4, "reward_sum": 0.0, "turns": 1}]})"));
  EpisodeRewardManager resumed(true);
  resumed.load_state(saved);
  CHECK(resumed.assign({turn(4, 1.0, 2, true), turn(3, 1.5, 1, false)}) == TurnTokenRewards{{0.0f, 0.5f}, {0.0f}});
  CHECK(resumed.open_episodes() == 1);
  const TurnTokenRewards last = resumed.assign({turn(3, -1.0, 2, true)});
  CHECK(last[0][0] == 0.0f);
  CHECK(last[0][1] == Approx(1.0 / 3.0));
  CHECK(resumed.open_episodes() == 0);
  CHECK_THROWS_AS(resumed.load_state(nlohmann::json{{"open", 1}}), std::invalid_argument);
}

TEST_CASE("the episode reward manager never assigns an episode reward twice") {
  EpisodeRewardManager manager(false);
  CHECK_THROWS_AS(manager.assign({turn(5, 1.0, 1, true), turn(5, 1.0, 1, true)}), std::logic_error);
  // The failed collection changed nothing: episode 5 starts from zero when it is collected again.
  CHECK(manager.open_episodes() == 0);
  CHECK(manager.assign({turn(5, 2.0, 1, true)}) == TurnTokenRewards{{2.0f}});
  CHECK_THROWS_AS(manager.assign({turn(6, 1.0, 0, true)}), std::invalid_argument);  // no token to hold it
}

TEST_CASE("segmentation splits at discourse markers that start a word") {
  SegmentationConfig config;
  // "I think 2. Wait, no. So it is 3." : "Wait," starts in token 4, "So " in token 7 ("So" + " it").
  CHECK(segment_ends({"I", " think", " 2", ".", " Wait,", " no", ".", " So", " it", " is", " 3", "."}, config) ==
        std::vector<size_t>{3, 6, 11});
  // A marker split over two tokens opens a segment at the token with its first character.
  CHECK(segment_ends({"Done", ".", " Wa", "it,", " yes"}, config) == std::vector<size_t>{1, 4});
  // A marker at the very start opens nothing; an empty reply has no segment.
  CHECK(segment_ends({"Hmm,", " ok"}, config) == std::vector<size_t>{1});
  CHECK(segment_ends({}, config).empty());
  config.markers = {"Then "};
  CHECK(segment_ends({"a", " Then", " b", " Wait,", " c"}, config) == std::vector<size_t>{0, 4});
  // "It is also so fine": the "so " inside "also" is no marker, the word "so " (token 3) is.
  config.markers = {"so "};
  CHECK(segment_ends({"It", " is", " also", " so", " fine"}, config) == std::vector<size_t>{2, 4});
}

TEST_CASE("segmentation falls back to sentence boundaries, then to a hard split") {
  SegmentationConfig config;
  config.max_segment_tokens = 4;
  // 10 tokens, no marker. Window 0..3: last boundary "." at 2 -> end 2. Window 3..6: no boundary ->
  // hard end 6. Tokens 7..9 fit (3 <= 4) -> end 9.
  CHECK(segment_ends({"a", " b", ".", " c", " d", " e", " f", " g", " h", "!"}, config) ==
        std::vector<size_t>{2, 6, 9});
  // A newline is a boundary too. max 3: window 0..2, boundary at 1 -> end 1; tokens 2..4 fit.
  config.max_segment_tokens = 3;
  CHECK(segment_ends({"x", " y\n", "z", "w", "v"}, config) == std::vector<size_t>{1, 4});
  // A marker within the limit wins over the fallback: "So " opens token 2, both parts fit.
  CHECK(segment_ends({"p", " q", " So", " r", " s."}, config) == std::vector<size_t>{1, 4});
  config.max_segment_tokens = 0;
  CHECK_THROWS_AS(segment_ends({"a"}, config), std::invalid_argument);
}

TEST_CASE("marginal utilities: V(prefix) is the mean answer log-prob, U_i the change, on segment ends") {
  // (-0.5 - 1.5 - 1.0) / 3 = -1.
  CHECK(prefix_value({-0.5, -1.5, -1.0}) == Approx(-1.0));
  CHECK_THROWS_AS(prefix_value({}), std::invalid_argument);
  // V = -2, -1.5, -1.75, -0.25 -> U = 0.5, -0.25, 1.5.
  const std::vector<double> values = {-2.0, -1.5, -1.75, -0.25};
  const std::vector<double> utilities = marginal_utilities(values);
  REQUIRE(utilities.size() == 3);
  CHECK(utilities[0] == Approx(0.5));
  CHECK(utilities[1] == Approx(-0.25));
  CHECK(utilities[2] == Approx(1.5));
  // Segments end at tokens 3, 6, 11 of 12; the outcome 1 sits on token 11 in its own stream.
  const ReplyRewards rewards = process_rewards(12, {3, 6, 11}, values, 1.0);
  CHECK(rewards.process == std::vector<float>{0, 0, 0, 0.5f, 0, 0, -0.25f, 0, 0, 0, 0, 1.5f});
  CHECK(rewards.outcome == std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0f});
  CHECK_THROWS_AS(process_rewards(12, {3, 6, 10}, values, 1.0), std::invalid_argument);  // last end != 11
  CHECK_THROWS_AS(process_rewards(12, {3, 6, 11}, {-2.0, -1.5}, 1.0), std::invalid_argument);
}

namespace {

/**
 * Group 1, gamma 0.5:
 *   A: states s0 s1 s2,    rewards 0 0 1   -> R = 1, R_t = 0.25 0.5 1
 *   B: states s0 s1 s1 s3, rewards 0 0 0 1 -> R = 1, R_t = 0.125 0.25 0.5 1  (s1 visited twice)
 *   C: states s0 s4,       rewards 0 0     -> R = 0, R_t = 0 0              (s4: no one else)
 * Group 2: D: state s0, reward 5: alone in its group, and its s0 is not group 1's s0.
 */
std::vector<GigpoEpisode> gigpo_episodes() {
  return {{1, {0, 0, 1}, {"s0", "s1", "s2"}},
          {1, {0, 0, 0, 1}, {"s0", "s1", "s1", "s3"}},
          {1, {0, 0}, {"s0", "s4"}},
          {2, {5}, {"s0"}}};
}

}  // namespace

TEST_CASE("discounted step returns") {
  CHECK(discounted_returns({0, 0, 1}, 0.5) == std::vector<double>{0.25, 0.5, 1.0});
  const std::vector<double> returns = discounted_returns({0, 0, 1}, 0.95);  // 0.95^2, 0.95, 1
  CHECK(returns[0] == Approx(0.9025));
  CHECK(returns[1] == Approx(0.95));
  CHECK(returns[2] == Approx(1.0));
}

TEST_CASE("GiGPO with std normalisation: episode and anchor-state step advantages") {
  GigpoParams params;
  params.gamma = 0.5;
  params.epsilon = 0.0;
  const auto adv = gigpo_advantages(gigpo_episodes(), params);
  // Episode returns 1, 1, 0: mean 2/3, unbiased var ((1/3)^2 * 2 + (2/3)^2) / 2 = 1/3, std 1/sqrt(3).
  // A^E = (1/3) sqrt(3) = 0.5773503 for A and B, -(2/3) sqrt(3) = -1.1547005 for C.
  const double a = std::sqrt(3.0) / 3.0;
  // Step group s0 = {A0 0.25, B0 0.125, C0 0}: mean 0.125, std sqrt((0.125^2 * 2) / 2) = 0.125 -> 1, 0, -1.
  // Step group s1 = {A1 0.5, B1 0.25, B2 0.5}: mean 5/12, deviations 1/12, -1/6, 1/12,
  //   var (1/144 + 1/36 + 1/144) / 2 = 1/48, std 1/sqrt(48) -> sqrt(48)/12 = 0.5773503, -sqrt(48)/6 = -1.1547005.
  // s2, s3, s4 are singletons -> 0. Combined (omega 1) = A^E + A^S.
  const std::vector<std::vector<double>> episode = {{a, a, a}, {a, a, a, a}, {-2 * a, -2 * a}, {0}};
  const std::vector<std::vector<double>> step = {{1, a, 0}, {0, -2 * a, a, 0}, {-1, 0}, {0}};
  REQUIRE(adv.size() == 4);
  for (size_t e = 0; e < adv.size(); ++e) {
    REQUIRE(adv[e].size() == episode[e].size());
    for (size_t t = 0; t < adv[e].size(); ++t) {
      CAPTURE(e);
      CAPTURE(t);
      CHECK(adv[e][t].episode == Approx(episode[e][t]));
      CHECK(adv[e][t].step == Approx(step[e][t]));
      CHECK(adv[e][t].combined == Approx(episode[e][t] + step[e][t]));
    }
  }
}

TEST_CASE("GiGPO mean-norm variant with a step weight") {
  GigpoParams params;
  params.gamma = 0.5;
  params.normalisation = GigpoNormalisation::kMean;
  params.step_weight = 2.0;
  const auto adv = gigpo_advantages(gigpo_episodes(), params);
  // A^E = R - 2/3: 1/3, 1/3, -2/3. A^S = R_t - group mean: s0: 0.125, 0, -0.125; s1: 1/12, -1/6, 1/12.
  // Combined = A^E + 2 A^S.
  CHECK(adv[0][0].combined == Approx(1.0 / 3 + 2 * 0.125));
  CHECK(adv[0][1].combined == Approx(1.0 / 3 + 2.0 / 12));
  CHECK(adv[0][2].combined == Approx(1.0 / 3));
  CHECK(adv[1][0].combined == Approx(1.0 / 3));
  CHECK(adv[1][1].combined == Approx(1.0 / 3 - 2.0 / 6));
  CHECK(adv[1][2].combined == Approx(1.0 / 3 + 2.0 / 12));
  CHECK(adv[1][3].combined == Approx(1.0 / 3));
  CHECK(adv[2][0].combined == Approx(-2.0 / 3 - 2 * 0.125));
  CHECK(adv[2][1].combined == Approx(-2.0 / 3));
  CHECK(adv[3][0].combined == Approx(0.0));
  CHECK_THROWS_AS(gigpo_advantages({{1, {0, 1}, {"s0"}}}, params), std::invalid_argument);
}

TEST_CASE("dynamic sampling drops groups whose episodes all got the same reward") {
  CHECK_FALSE(has_signal({1, 1, 1}));
  CHECK(has_signal({1, 0, 1}));
  CHECK_FALSE(has_signal({0.5}));
  CHECK_FALSE(has_signal({}));

  struct Group {
    int id;
    std::vector<double> rewards;
  };
  const auto rewards_of = [](const Group& g) -> const std::vector<double>& { return g.rewards; };
  // Try 1: g1 (equal) dropped, g2 kept, g3 (equal) dropped. Try 2: g4 kept, g5 dropped, g6 kept
  // (batch of 3 full), g7 surplus. No third try.
  const std::vector<std::vector<Group>> batches = {
      {{1, {1, 1}}, {2, {0, 1}}, {3, {0, 0}}},
      {{4, {1, 0}}, {5, {1, 1}}, {6, {0.5, 1}}, {7, {0, 1}}},
      {{8, {0, 1}}}};
  size_t calls = 0;
  const auto result = sample_groups_with_signal<Group>(3, 5, [&] { return batches.at(calls++); }, rewards_of);
  std::vector<int> kept;
  for (const Group& g : result.kept) kept.push_back(g.id);
  CHECK(kept == std::vector<int>{2, 4, 6});
  CHECK(result.groups_dropped == 3);
  CHECK(result.groups_surplus == 1);
  CHECK(result.tries == 2);
  CHECK(calls == 2);
}

TEST_CASE("dynamic sampling stops at the try limit and trains on what it has") {
  struct Group {
    std::vector<double> rewards;
  };
  // Every try brings one signal-free pair and one useful group; 4 wanted, 3 tries: 3 kept, 3 dropped.
  const auto result = sample_groups_with_signal<Group>(
      4, 3, [] { return std::vector<Group>{{{1, 1}}, {{0, 1}}}; },
      [](const Group& g) -> const std::vector<double>& { return g.rewards; });
  CHECK(result.kept.size() == 3);
  CHECK(result.groups_dropped == 3);
  CHECK(result.tries == 3);
  CHECK_THROWS_AS(sample_groups_with_signal<Group>(
                      1, 0, [] { return std::vector<Group>{}; },
                      [](const Group& g) -> const std::vector<double>& { return g.rewards; }),
                  std::invalid_argument);
}
