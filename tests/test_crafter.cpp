// Crafter port: golden replay (plain and BALROG text), OpenSimplex values from the Python
// reference, mechanics, random-playout invariants on other seeds, bad input and the CLI.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <zlib.h>

#include "envs/reply_parser.h"
#include "envs/common/sha256.h"
#include "envs/crafter/crafter_env.h"
#include "envs/crafter/crafter_expert.h"
#include "envs/crafter/opensimplex.h"
#include "envs/expert.h"
#include "envs/golden.h"
#include "envs/registry.h"
#include "temp_dir.h"
#include "test_util.h"

using namespace turnrl::envs;
using namespace turnrl::envs::crafter;

namespace {

std::vector<std::string> golden_files(const std::string& folder) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(turnrl::test::shared_path(folder))) {
    if (entry.path().string().ends_with(".jsonl.gz")) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void check_exact(const std::string& folder, size_t expected_files) {
  const auto files = golden_files(folder);
  REQUIRE(files.size() == expected_files);
  for (const auto& file : files) {
    const ReplayReport report = replay_golden_file(file);
    INFO(file);
    if (report.first_mismatch) {
      INFO("line " << report.first_mismatch->line << " field " << report.first_mismatch->field.path << " expected "
                   << report.first_mismatch->field.expected << " got " << report.first_mismatch->field.got);
      CHECK(false);
    }
    CHECK(report.episodes >= 2);
    CHECK(report.exact_episodes == report.episodes);
  }
}

CrafterEnv& as_crafter(Env& env) { return dynamic_cast<CrafterEnv&>(env); }

}  // namespace

TEST_CASE("every golden Crafter episode replays exactly") {
  check_exact("golden/crafter/public", 20);
  check_exact("golden/crafter/scripted", 3);
  check_exact("golden/crafter_text/public", 10);
  check_exact("golden/crafter_text/feedback", 3);
}

TEST_CASE("a corrupted golden record is reported at the right field") {
  auto records = read_jsonl(golden_files("golden/crafter/public").front());
  records[7]["rng_draws"] = records[7]["rng_draws"].get<int64_t>() + 1;
  const turnrl::test::TempDir dir("turnrl_crafter");
  const std::string path = dir / "corrupt.jsonl.gz";
  write_jsonl_gz(path, records);
  const ReplayReport report = replay_golden_file(path);
  REQUIRE(report.first_mismatch);
  CHECK(report.first_mismatch->line == 8);
  CHECK(report.first_mismatch->field.path == "rng_draws");
  CHECK(report.exact_episodes == report.episodes - 1);
}

TEST_CASE("OpenSimplex noise3 equals opensimplex v0.3 bit for bit") {
  // 3000 points of tests/data/opensimplex/make_noise3_samples.py over six seeds: "seed x y z value".
  const std::string path = std::string(TURNRL_SOURCE_DIR) + "/tests/data/opensimplex/noise3_samples.txt.gz";
  gzFile file = gzopen(path.c_str(), "rb");
  REQUIRE_MESSAGE(file, path);
  std::map<int64_t, std::vector<std::array<double, 4>>> samples;  // by seed: x, y, z, value
  char line[256];
  while (gzgets(file, line, sizeof line)) {
    std::istringstream fields(line);
    int64_t seed;
    std::string x, y, z, value;
    const bool parsed = static_cast<bool>(fields >> seed >> x >> y >> z >> value);
    REQUIRE_MESSAGE(parsed, line);
    const auto number = [](const std::string& hex) { return std::strtod(hex.c_str(), nullptr); };
    samples[seed].push_back({number(x), number(y), number(z), number(value)});
  }
  gzclose(file);
  REQUIRE(samples.size() == 6);
  const auto bits = [](double v) { return std::bit_cast<uint64_t>(v); };
  for (const auto& [seed, points] : samples) {
    const OpenSimplex noise(seed);
    std::vector<double> x, y, z, batch(points.size());
    for (const auto& p : points) {
      x.push_back(p[0]);
      y.push_back(p[1]);
      z.push_back(p[2]);
    }
    noise.noise3(x, y, z, batch);
    size_t mismatches = 0;
    for (size_t i = 0; i < points.size(); ++i) {
      const double single = noise.noise3(x[i], y[i], z[i]);
      if (bits(single) == bits(points[i][3]) && bits(batch[i]) == bits(points[i][3])) continue;
      const auto hex = [](double v) {
        char text[32];
        std::snprintf(text, sizeof text, "%a", v);
        return std::string(text);
      };
      if (++mismatches <= 5)
        FAIL_CHECK("seed " << seed << " noise3(" << hex(x[i]) << ", " << hex(y[i]) << ", " << hex(z[i]) << ") = "
                           << hex(single) << " (batch " << hex(batch[i]) << "), reference " << hex(points[i][3]));
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("OpenSimplex noise3 rejects what it cannot place") {
  const OpenSimplex noise(0);
  CHECK_THROWS_AS(noise.noise3(std::nan(""), 0, 0), std::out_of_range);
  CHECK_THROWS_AS(noise.noise3(0, 1e300, 0), std::out_of_range);
  std::vector<double> x(3, 0.5), y(3, 0.25), z(2, 1.0), out(3);
  CHECK_THROWS_AS(noise.noise3(x, y, z, out), std::invalid_argument);
  z.push_back(INFINITY);
  CHECK_THROWS_AS(noise.noise3(x, y, z, out), std::out_of_range);
}

TEST_CASE("sha256 of known inputs") {
  const std::string abc = "abc";
  CHECK(sha256_hex(reinterpret_cast<const uint8_t*>(abc.data()), abc.size()) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex(nullptr, 0) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const std::string two_blocks(56, 'a');  // the padding needs a second block
  CHECK(sha256_hex(reinterpret_cast<const uint8_t*>(two_blocks.data()), two_blocks.size()) ==
        "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
}

TEST_CASE("episode seeds, reset state and the BALROG no-op") {
  auto env = make_env("crafter");
  auto& crafter = as_crafter(*env);
  crafter.reset_episode(0, 1);
  CHECK(crafter.world_seed() == 1256191933u);  // hash((0, 1)) % (2**31 - 1), spec section 8
  CHECK(crafter.episode_step() == 0);
  CHECK(crafter.player_pos() == Pos{32, 32});
  CHECK(crafter.player().facing == Pos{0, 1});
  CHECK(crafter.player().health() == 9);
  CHECK(crafter.world().random.draws() == 14639u);  // golden/crafter/public/seed_0 reset record
  auto balrog = make_env("crafter/balrog");
  balrog->reset(0);
  CHECK(as_crafter(*balrog).episode_step() == 1);
  CHECK(as_crafter(*balrog).world().random.draws() == 14673u);
  CHECK(balrog->max_steps() == 2000);
  CHECK(env->max_steps() == 10000);
}

TEST_CASE("mechanics: sleeping at full energy, facing, crafting without a table, night draws") {
  auto env = make_env("crafter");
  auto& crafter = as_crafter(*env);
  crafter.reset(3);
  const World& world = crafter.world();
  // Sleeping while energy is full does nothing; the noop ages the counters by one.
  env->step(action::kSleep);
  CHECK_FALSE(crafter.player().sleeping);
  CHECK(crafter.player().hunger == 1.0);
  // Facing changes even when the move is blocked.
  env->step(action::kMoveLeft);
  CHECK(crafter.player().facing == Pos{-1, 0});
  // Crafting without a table fails silently.
  env->step(action::kMakeWoodPickaxe);
  CHECK(crafter.player().inventory[item::kWoodPickaxe] == 0);
  // Night steps consume exactly 6174 outputs for rendering (plus creature draws).
  while (crafter.episode_step() < 147 && !crafter.crafter_done()) env->step(action::kNoop);
  if (!crafter.crafter_done()) {
    const uint64_t before = world.random.draws();
    env->step(action::kNoop);
    CHECK(world.daylight < 0.5);
    CHECK(world.random.draws() - before >= 6174u);
  }
}

TEST_CASE("random playouts keep the invariants on other seeds") {
  std::mt19937 rng(99);
  for (const char* id : {"crafter", "crafter/balrog"}) {
    auto env = make_env(id);
    auto twin = make_env(id);
    for (uint64_t seed = 5000; seed < 5004; ++seed) {
      env->reset(seed);
      twin->reset(seed);
      auto& a = as_crafter(*env);
      for (int t = 0; t < 400; ++t) {
        const int action = static_cast<int>(rng() % env->num_actions());
        const StepResult ra = env->step(action);
        const StepResult rb = twin->step(action);
        CHECK(ra.reward == rb.reward);
        CHECK(a.semantic_map() == as_crafter(*twin).semantic_map());
        const Player& p = a.player();
        for (int v : p.inventory) {
          CHECK(v >= 0);
          CHECK(v <= 9);
        }
        const Pos pos = a.player_pos();
        CHECK(a.world().object_at(pos) == World::kPlayerSlot);
        CHECK(a.world().material(pos) != Material::kNone);
        CHECK(contains(kPlayerWalkable, a.world().material(pos)));
        CHECK(a.world().daylight >= 0.0);
        CHECK(a.world().daylight <= 1.0);
        CHECK(env->progression() >= 0.0);
        CHECK(env->progression() <= 1.0);
        const TextObservation text = env->observe_text();
        CHECK(text.short_term.starts_with("Your status:\n- health: "));
        CHECK(text.long_term.find("at your front.") != std::string::npos);
        if (ra.terminated || ra.truncated) {
          CHECK(p.health() <= 0);
          break;
        }
      }
    }
  }
}

TEST_CASE("text rules translate Verlog's synonyms") {
  auto env = make_env("crafter");
  std::mt19937_64 rng(1);
  CHECK(parse_reply("ACTION: move west.", *env, ReplyFormat::kActionTag, rng).action == action::kMoveLeft);
  CHECK(parse_reply("ACTION: chop tree\nmore", *env, ReplyFormat::kActionTag, rng).action == action::kDo);
  CHECK(parse_reply("ACTION: make crafting table", *env, ReplyFormat::kActionTag, rng).action == action::kPlaceTable);
  CHECK(parse_reply("ACTION: do (chop tree)", *env, ReplyFormat::kActionTag, rng).action == action::kDo);
  CHECK_FALSE(parse_reply("ACTION: noop (wait)", *env, ReplyFormat::kActionTag, rng).valid);
  const int diagonal = parse_reply("ACTION: move north-west", *env, ReplyFormat::kActionTag, rng).action;
  CHECK((diagonal == action::kMoveUp || diagonal == action::kMoveLeft));
  const ParsedReply invalid = parse_reply("ACTION: fly", *env, ReplyFormat::kActionTag, rng);
  CHECK_FALSE(invalid.valid);
  CHECK(invalid.action == env->default_action());
  CHECK(env->actions()[env->default_action()].name == "Noop");
}

TEST_CASE("bad input") {
  auto env = make_env("crafter");
  CHECK_THROWS_AS(env->step(0), std::logic_error);
  CHECK_THROWS_AS(env->observe_text(), std::logic_error);
  env->reset(0);
  CHECK_THROWS_AS(env->step(17), std::out_of_range);
  CHECK_THROWS_AS(env->step(-1), std::out_of_range);
  CHECK_THROWS_AS(make_env("crafter", {{"length", -1}}), std::invalid_argument);
  CHECK_THROWS_AS(make_env("crafter", {{"lenght", 5}}), std::invalid_argument);
  CHECK_THROWS_AS(make_env("crafter", {{"area", {64}}}), std::invalid_argument);
  CHECK_THROWS_AS(make_env("crafter/hard"), std::invalid_argument);
  try {
    make_env("crafter/balrog", {{"colour", 1}});
    CHECK(false);
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("'colour'") != std::string::npos);
  }
  // A short length ends the episode as a truncation.
  auto short_env = make_env("crafter", {{"length", 3}, {"area", {32, 32}}});
  short_env->reset(1);
  short_env->step(0);
  short_env->step(0);
  const StepResult last = short_env->step(0);
  CHECK((last.truncated || last.terminated));
}

TEST_CASE("turnrl replay, play and bench on Crafter") {
  using turnrl::test::run_turnrl;
  auto replay = run_turnrl("replay --golden '" + golden_files("golden/crafter_text/feedback").front() + "'");
  CHECK(replay.exit_code == 0);
  CHECK(replay.output.find("2/2 episodes exact") != std::string::npos);
  auto play = run_turnrl("play --env crafter/balrog --seed 0", "Do\nflap wings\n:quit\n");
  CHECK(play.exit_code == 0);
  CHECK(play.output.find("You are an agent playing Crafter.") != std::string::npos);
  CHECK(play.output.find("You face grass at your front.") != std::string::npos);
  CHECK(play.output.find("Defaulted to action: Noop") != std::string::npos);
  auto plain = run_turnrl("play --env crafter --seed 1", "Move West\n");
  CHECK(plain.exit_code == 0);
  auto bench = run_turnrl("bench crafter --steps 300");
  CHECK(bench.exit_code == 0);
  CHECK(bench.output.find("\"steps_per_sec\"") != std::string::npos);
}

TEST_CASE("the scripted expert works down the achievement tree on unseen worlds") {
  // Seeds no golden file uses; the expert plays BALROG's Crafter for up to 1000 turns, with each sight.
  constexpr int kEpisodes = 8, kTurns = 1000;
  auto env = make_env("crafter/balrog");
  CHECK_FALSE(has_expert(*make_env("corridor/short")));
  CHECK_THROWS_AS(expert_action(*make_env("corridor/short"), 0), std::invalid_argument);
  for (const ExpertSight sight : {ExpertSight::kFull, ExpertSight::kView}) {
    REQUIRE(has_expert(*env, sight));
    double expert_unlocks = 0, random_unlocks = 0;
    for (int episode = 0; episode < kEpisodes; ++episode) {
      const uint64_t seed = 7000 + static_cast<uint64_t>(episode);
      env->reset(seed);
      int turn = 0;
      for (StepResult step; turn < kTurns && !step.terminated && !step.truncated; ++turn) {
        const int action = expert_action(*env, seed * 7919 + static_cast<uint64_t>(turn), sight);
        REQUIRE(action >= 0);
        REQUIRE(action < env->num_actions());
        step = env->step(action);
      }
      const std::vector<std::string> unlocked = env->unlocked_achievements();
      MESSAGE(expert_sight_names()[static_cast<size_t>(sight)] << " sight, seed " << seed << ": " << unlocked.size() << " achievements in " << turn << " turns");
      // The view-bound expert may search a whole episode without finding stone.
      for (const std::string basic : {"collect_wood", "place_table", "make_wood_pickaxe", "make_wood_sword", "collect_stone"}) {
        if (sight == ExpertSight::kView && basic == "collect_stone") continue;
        CHECK_MESSAGE(std::find(unlocked.begin(), unlocked.end(), basic) != unlocked.end(), "seed " << seed << " lacks " << basic);
      }
      expert_unlocks += static_cast<double>(unlocked.size());
      env->reset(seed);
      std::mt19937_64 rng(seed);
      for (int t = 0; t < turn; ++t) {
        if (const StepResult step = env->step(std::uniform_int_distribution<int>(0, env->num_actions() - 1)(rng)); step.terminated || step.truncated) break;
      }
      random_unlocks += static_cast<double>(env->unlocked_achievements().size());
    }
    MESSAGE("mean achievements: expert " << expert_unlocks / kEpisodes << ", random " << random_unlocks / kEpisodes);
    // 15.5 (full sight) and 13.25 (view) when written; the view-bound one finds iron and diamonds less.
    CHECK(expert_unlocks / kEpisodes >= (sight == ExpertSight::kFull ? 12.0 : 10.0));
    CHECK(expert_unlocks > 2 * random_unlocks);
  }
}

TEST_CASE("the view-bound expert reads only the prompt's window") {
  // Rewriting every cell outside the window the observation describes must leave its move as it was.
  auto env = make_env("crafter/balrog");
  const auto& crafter_env = dynamic_cast<const crafter::CrafterEnv&>(*env);
  const crafter::Pos view = crafter_env.config().view;
  int differs_with_full_sight = 0, checked = 0;
  for (uint64_t seed = 7300; seed < 7303; ++seed) {
    env->reset(seed);
    StepResult step;
    for (int turn = 0; turn < 400 && !step.terminated && !step.truncated; ++turn) {
      const uint64_t move_seed = seed * 7919 + static_cast<uint64_t>(turn);
      const ExpertMove move = expert_move(*env, move_seed, ExpertSight::kView);
      if (turn % 10 == 0) {
        crafter::World rewritten = crafter_env.world();
        const crafter::Pos at = crafter_env.player_pos();
        for (int x = 0; x < rewritten.width(); ++x) {
          for (int y = 0; y < rewritten.height(); ++y) {
            if (std::abs(x - at.x) <= view.x / 2 && std::abs(y - at.y) <= view.y / 2 - 1) continue;
            rewritten.set_material({x, y}, (x + y) % 2 ? crafter::Material::kTree : crafter::Material::kWater);
          }
        }
        const ExpertMove same = crafter::expert_move(rewritten, crafter_env.player(), view, move_seed, ExpertSight::kView);
        INFO("seed " << seed << ", turn " << turn);
        CHECK(same.action == move.action);
        CHECK(same.aim == move.aim);
        const ExpertMove full = crafter::expert_move(rewritten, crafter_env.player(), view, move_seed, ExpertSight::kFull);
        differs_with_full_sight += full.action != move.action || full.aim != move.aim;
        ++checked;
      }
      step = env->step(move.action);
    }
  }
  // The rewrite is not idle: the full-sight expert, reading the whole map, answers it differently.
  MESSAGE(differs_with_full_sight << " of " << checked << " rewritten states move the full-sight expert");
  CHECK(differs_with_full_sight > checked / 10);
}

TEST_CASE("the expert's aim names what its action is for, in words the prompts use") {
  // The aim is reasoning a model writes before its action ("{aim} ACTION: {action}") and reads
  // back in the next prompt: every word must be one the tiny vocabulary has (the families' words).
  std::set<std::string> words;
  for (const EnvFamily& family : env_families()) words.insert(family.vocabulary.begin(), family.vocabulary.end());
  auto env = make_env("crafter/balrog");
  for (const ExpertSight sight : {ExpertSight::kFull, ExpertSight::kView}) {
    std::map<std::string, int> aims;
    for (uint64_t seed = 7100; seed < 7104; ++seed) {
      env->reset(seed);
      StepResult step;
      for (int turn = 0; turn < 600 && !step.terminated && !step.truncated; ++turn) {
        const ExpertMove move = expert_move(*env, seed * 7919 + static_cast<uint64_t>(turn), sight);
        INFO(expert_sight_names()[static_cast<size_t>(sight)] << " sight, seed " << seed << ", turn " << turn << ": " << move.aim);
        CHECK(move.action == expert_action(*env, seed * 7919 + static_cast<uint64_t>(turn), sight));
        std::istringstream split(move.aim);
        int count = 0;
        for (std::string word; split >> word; ++count) CHECK_MESSAGE(words.count(word) == 1, word);
        CHECK(count >= 1);
        const std::string action = env->actions()[static_cast<size_t>(move.action)].name;
        if (action.starts_with("Make") || action.starts_with("Place")) {
          std::string lower = action;
          std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
          CHECK(move.aim == lower);
        }
        if (action == "Do") CHECK((move.aim.starts_with("collect ") || move.aim.starts_with("hit ")));
        ++aims[move.aim];
        step = env->step(move.action);
      }
    }
    for (const std::string aim : {"collect tree", "place table", "make wood pickaxe", "collect stone", "collect water", "hit cow"}) {
      CHECK_MESSAGE(aims.count(aim) == 1, "no turn aims to " << aim);
    }
  }
}
