#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "envs/registry.h"
#include "temp_dir.h"
#include "test_util.h"
#include "tools/eval_summary.h"
#include "tools/serve/openai_stub_server.h"
#include "trainer/rollout/episode_runner.h"

using namespace turnrl;

namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, by)) parts.push_back(part);
  return parts;
}

/** One task of every registered env family: the sweep covers all of them as they land. */
std::vector<std::string> one_task_per_family() {
  std::vector<std::string> tasks;
  for (const auto& family : envs::env_families()) tasks.push_back(family.ids.front());
  return tasks;
}

}  // namespace

TEST_CASE("BALROG summary: SE = population std / sqrt(n); overall SE = sqrt(sum SE^2) / n_envs") {
  std::vector<tools::EpisodeResult> episodes = {
      {"m", "a", "a/1", 1.0}, {"m", "a", "a/1", 0.0}, {"m", "a", "a/2", 1.0}, {"m", "a", "a/2", 1.0}, {"m", "b", "b/1", 0.5}};
  const auto rows = tools::summarize(episodes);
  REQUIRE(rows.size() == 6u);  // a/1, a/2, a, b/1, b, overall
  CHECK(rows[0].task == "a/1");
  CHECK(rows[0].mean == doctest::Approx(50.0));
  CHECK(rows[0].standard_error == doctest::Approx(50.0 / std::sqrt(2.0)));
  CHECK(rows[1].standard_error == doctest::Approx(0.0));
  CHECK(rows[2].task == "all");
  CHECK(rows[2].mean == doctest::Approx(75.0));
  CHECK(rows[2].standard_error == doctest::Approx(std::sqrt(0.1875) * 100 / 2.0));
  CHECK(rows[5].env == "all");
  CHECK(rows[5].mean == doctest::Approx((75.0 + 50.0) / 2));
  CHECK(rows[5].standard_error == doctest::Approx(std::sqrt(0.1875) * 100 / 2.0 / 2));
  const std::string svg = tools::summary_svg(rows);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
}

TEST_CASE("summary: tokens summed per task, env and model; cost from the model's USD per million tokens") {
  std::vector<tools::EpisodeResult> episodes = {{"m", "a", "a/1", 1.0, 1000, 10},
                                                {"m", "a", "a/2", 0.0, 3000, 30},
                                                {"m", "b", "b/1", 0.5, 500'000, 250'000},
                                                {"free", "a", "a/1", 0.0, 7, 7}};
  const auto rows = tools::summarize(episodes, {{"m", {2.5, 10.0}}});
  REQUIRE(rows.size() == 3u + 6u);  // free: a/1, a, overall; m: a/1, a/2, a, b/1, b, overall
  const auto& m_a = rows[5];
  CHECK(m_a.model == "m");
  CHECK(m_a.task == "all");
  CHECK(m_a.prompt_tokens == 4000u);
  CHECK(m_a.completion_tokens == 40u);
  REQUIRE(m_a.cost_usd.has_value());
  CHECK(*m_a.cost_usd == doctest::Approx((4000 * 2.5 + 40 * 10.0) / 1e6));
  const auto& m_all = rows.back();
  CHECK(m_all.env == "all");
  CHECK(m_all.prompt_tokens == 504'000u);
  CHECK(m_all.completion_tokens == 250'040u);
  CHECK(*m_all.cost_usd == doctest::Approx(504'000 * 2.5e-6 + 250'040 * 10e-6));  // 1.26 + 2.5004
  CHECK_FALSE(rows[2].cost_usd.has_value());  // no prices: no cost
  CHECK(rows[2].prompt_tokens == 7u);
  const std::string markdown = tools::summary_markdown(rows);
  CHECK(markdown.find("| m | 3 | 504000 | 250040 | 3.7604 |") != std::string::npos);
  CHECK(markdown.find("| free | 1 | 7 | 7 |  |") != std::string::npos);
  CHECK(tools::summary_csv(rows).find("m,all,all,3,") != std::string::npos);
  CHECK(tools::summary_csv(rows).find(",1,0.0000,504000,250040,3.760400\n") != std::string::npos);
}

TEST_CASE("summary with repeats: each row's spread is the sample std of the repeats' own means") {
  std::vector<tools::EpisodeResult> episodes;
  // a/1: repeat means 50, 100, 0 (std 50); a/2: 100 in every repeat (std 0).
  const std::vector<std::vector<double>> a1 = {{1.0, 0.0}, {1.0, 1.0}, {0.0, 0.0}};
  for (int r = 0; r < 3; ++r) {
    for (double p : a1[r]) episodes.push_back({"m", "a", "a/1", p, 0, 0, r});
    episodes.push_back({"m", "a", "a/2", 1.0, 0, 0, r});
  }
  const auto rows = tools::summarize(episodes);
  REQUIRE(rows.size() == 4u);  // a/1, a/2, a, overall
  CHECK(rows[0].repeats == 3u);
  CHECK(rows[0].mean == doctest::Approx(50.0));
  CHECK(rows[0].repeat_std == doctest::Approx(50.0));
  CHECK(rows[1].repeat_std == doctest::Approx(0.0));
  // env a per repeat: (1 + 0 + 1) / 3, 1, 1 / 3 -> 66.7, 100, 33.3: std 33.3
  CHECK(rows[2].repeat_std == doctest::Approx(100.0 / 3));
  CHECK(rows[3].repeat_std == doctest::Approx(100.0 / 3));  // one env: the overall is the env's
  CHECK(tools::summary_markdown(rows).find("| m | a | a/1 | 6 | 50.0 ± 20.4 | 50.0 (3 repeats) |") != std::string::npos);
  CHECK(tools::summary_csv(rows).find("m,a,a/1,6,50.0000,20.4124,3,50.0000,") != std::string::npos);
  for (auto& e : episodes) e.repeat = 0;
  CHECK(tools::summarize(episodes)[0].repeat_std == 0.0);
  CHECK(tools::summary_markdown(tools::summarize(episodes)).find("repeats") == std::string::npos);
}

TEST_CASE("eval sweep: random, tiny LLM and loopback HTTP agents over every env family, outputs checked, resume") {
  const auto tasks = one_task_per_family();
  serve::OpenAiStubServer server([&](int index, const nlohmann::json&) {
    // Alternate a garbled reply with a plain action name of the first family.
    return serve::ChatStubReply{200, index % 3 == 0 ? "I am not sure." : "turn left", 0};
  });
  const test::TempDir scratch("turnrl_test_eval");
  const std::filesystem::path dir = scratch.path();
  const std::string tiny_model = (dir / "tiny").string();
  const auto created = test::run_turnrl("new-model --preset tiny --out " + tiny_model);
  REQUIRE_MESSAGE(created.exit_code == 0, created.output);
  std::string task_list;
  for (const auto& task : tasks) task_list += (task_list.empty() ? "" : ", ") + task;
  const std::string config = (dir / "sweep.yaml").string();
  std::ofstream(config) << "output_dir: " << (dir / "out").string() << "\n"
                        << "env:\n  id: [" << task_list << "]\n"
                        << "episodes_per_task: 3\nseed: 5\nparallel_episodes: 4\nturn: {max_turns: 6}\n"
                        << "models:\n  - {name: random, type: random}\n"
                        << "  - {name: tiny, type: llm, path: " << tiny_model << ", temperature: 1.0, max_response_tokens: 6}\n"
                        << "  - {name: loop, type: http, base_url: \"" << server.base_url()
                        << "\", model: m, timeout: 5, retries: 1}\n";
  const auto first = test::run_turnrl("eval --config " + config);
  REQUIRE_MESSAGE(first.exit_code == 0, first.output);

  const std::string jsonl = read(dir / "out/episodes.jsonl");
  const auto lines = split(jsonl, '\n');
  constexpr size_t kModels = 3;
  REQUIRE(lines.size() == kModels * 3 * tasks.size());
  std::map<std::tuple<std::string, std::string>, std::vector<double>> progression;
  std::map<std::string, size_t> prompt_tokens, completion_tokens;  // per model, from the episodes
  size_t tiny_turns = 0;
  for (const auto& line : lines) {
    const auto record = nlohmann::json::parse(line);
    const auto& turns = record.at("turns");
    CHECK(turns.size() == record.at("steps").get<size_t>());
    CHECK(turns.size() >= 1u);
    CHECK(turns.size() <= 6u);
    CHECK(record.at("seed").get<int>() == 5 + record.at("episode").get<int>());
    double reward = 0.0;
    size_t episode_prompt = 0, episode_completion = 0;
    for (const auto& turn : turns) {
      episode_prompt += turn.at("prompt_tokens").get<size_t>();
      episode_completion += turn.at("completion_tokens").get<size_t>();
      CHECK(turn.at("prompt").size() >= 2u);
      CHECK(turn.at("prompt")[0].at("role") == "user");
      CHECK(turn.at("prompt").back().at("content").get<std::string>().find("Current Observation:") == 0);
      CHECK(turn.at("action").is_string());
      const auto env = envs::make_env(record.at("task").get<std::string>());
      const auto& actions = env->actions();
      CHECK(std::any_of(actions.begin(), actions.end(),
                        [&](const envs::ActionSpec& a) { return a.name == turn.at("action").get<std::string>(); }));
      reward += turn.at("reward").get<double>();
      if (record.at("model") == "loop") {
        CHECK(turn.at("reply").get<std::string>().size() > 0);
      }
      if (record.at("model") == "tiny") ++tiny_turns;
    }
    CHECK(record.at("return").get<double>() == doctest::Approx(reward));
    CHECK(record.at("prompt_tokens").get<size_t>() == episode_prompt);
    CHECK(record.at("completion_tokens").get<size_t>() == episode_completion);
    prompt_tokens[record.at("model")] += episode_prompt;
    completion_tokens[record.at("model")] += episode_completion;
    progression[{record.at("model"), record.at("task")}].push_back(record.at("progression"));
  }
  CHECK(server.requests() > 0);
  CHECK(tiny_turns >= 3 * tasks.size());
  // Tokens: the stub's usage, summed; the local model's own count; none for the random agent.
  CHECK(server.prompt_tokens() > 0);
  CHECK(prompt_tokens["loop"] == server.prompt_tokens());
  CHECK(completion_tokens["loop"] == server.completion_tokens());
  CHECK(prompt_tokens["tiny"] > 0);
  CHECK(completion_tokens["tiny"] >= tiny_turns);
  CHECK(prompt_tokens["random"] + completion_tokens["random"] == 0);

  // The CSV rows match the JSONL, with BALROG's SE recomputed here.
  const auto csv = split(read(dir / "out/summary.csv"), '\n');
  REQUIRE(csv.size() >= 1u);
  CHECK(csv[0] == "model,env,task,episodes,progression_mean,standard_error,repeats,repeat_std,prompt_tokens,completion_tokens,cost_usd");
  size_t task_rows = 0;
  for (size_t i = 1; i < csv.size(); ++i) {
    const auto cells = split(csv[i], ',');
    REQUIRE(cells.size() >= 10u);  // no cost: the last cell empty
    const auto found = progression.find({cells[0], cells[2]});
    if (found == progression.end()) continue;
    ++task_rows;
    const auto& values = found->second;
    double mean = 0, squares = 0;
    for (double v : values) mean += 100 * v / values.size();
    for (double v : values) squares += (100 * v - mean) * (100 * v - mean);
    CHECK(std::stoul(cells[3]) == values.size());
    CHECK(std::stod(cells[4]) == doctest::Approx(mean).epsilon(1e-3));
    CHECK(std::stod(cells[5]) == doctest::Approx(std::sqrt(squares / values.size()) / std::sqrt(values.size())).epsilon(1e-3));
  }
  CHECK(task_rows == kModels * tasks.size());
  for (size_t i = 1; i < csv.size(); ++i) {
    const auto cells = split(csv[i], ',');
    if (cells[1] != "all") continue;
    CHECK(std::stoul(cells[8]) == prompt_tokens[cells[0]]);
    CHECK(std::stoul(cells[9]) == completion_tokens[cells[0]]);
  }
  CHECK(read(dir / "out/summary.md").find("| loop | " + std::to_string(3 * tasks.size()) + " | " + std::to_string(prompt_tokens["loop"])) !=
        std::string::npos);
  CHECK(read(dir / "out/summary.md").find("| random |") != std::string::npos);
  CHECK(read(dir / "out/summary.md").find("| tiny |") != std::string::npos);
  CHECK(read(dir / "out/summary.svg").find("</svg>") != std::string::npos);

  // Resume: a torn last line is dropped, only the missing episode is redone.
  {
    std::string torn = jsonl;
    const size_t cut = torn.rfind('\n', torn.size() - 2);
    torn = torn.substr(0, cut + 1) + "{\"model\": \"ran";
    std::ofstream(dir / "out/episodes.jsonl", std::ios::trunc) << torn;
  }
  const int before = server.requests();
  const auto second = test::run_turnrl("eval --config " + config);
  REQUIRE_MESSAGE(second.exit_code == 0, second.output);
  CHECK(second.output.find("resuming") != std::string::npos);
  CHECK(split(read(dir / "out/episodes.jsonl"), '\n').size() == lines.size());
  CHECK(server.requests() - before <= 6);  // at most one episode of the HTTP model redone

  // Unknown keys are rejected with the key and the file named.
  const std::string bad = (dir / "bad.yaml").string();
  std::ofstream(bad) << "env:\n  id: [" << tasks[0] << "]\nmodels: [{name: r, type: random, colour: red}]\n";
  const auto rejected = test::run_turnrl("eval --config " + bad);
  CHECK(rejected.exit_code != 0);
  CHECK(rejected.output.find("models[0].colour") != std::string::npos);
  CHECK(rejected.output.find("bad.yaml") != std::string::npos);
}

TEST_CASE("eval with a human at the terminal: prompts shown, typed replies played") {
  const test::TempDir scratch("turnrl_test_eval_human");
  const std::filesystem::path dir = scratch.path();
  const std::string config = (dir / "human.yaml").string();
  std::ofstream(config) << "output_dir: " << (dir / "out").string() << "\n"
                        << "env:\n  id: [babyai/goto]\nepisodes_per_task: 1\nturn: {max_turns: 2}\n"
                        << "models: [{name: me, type: human}]\n";
  const auto run = test::run_turnrl("eval --config " + config, "turn left\nI would rather fly\n");
  REQUIRE_MESSAGE(run.exit_code == 0, run.output);
  CHECK(run.output.find("Current Observation:") != std::string::npos);
  const auto record = nlohmann::json::parse(split(read(dir / "out/episodes.jsonl"), '\n').at(0));
  REQUIRE(record.at("turns").size() == 2u);
  CHECK(record.at("turns")[0].at("action") == "turn left");
  CHECK(record.at("turns")[1].at("reply") == "I would rather fly");
  CHECK(record.at("turns")[1].at("action") == "go forward");  // the default after an invalid reply
}

TEST_CASE("eval sweep against faults: 429s waited out, 5xx retried then recorded unfinished; nothing lost; a rerun plays exactly those") {
  // First run: every request of a seed divisible by 5 fails with 503 on each attempt (its episode
  // ends recorded with the error); the first attempt of a seed that is 1 modulo 7 gets a 429 with
  // a Retry-After. Second run: all succeed.
  std::atomic<bool> failing{true};
  std::map<int64_t, int> attempts;  // request seed -> attempts (the stub's thread; read between runs)
  std::set<int64_t> limited;
  serve::OpenAiStubServer server([&](int, const nlohmann::json& request) {
    const int64_t seed = request.value("seed", int64_t{0});
    const int attempt = attempts[seed]++;
    serve::ChatStubReply reply{200, "go forward", 0};
    if (failing && seed % 5 == 0) {
      reply.status = 503;
    } else if (failing && seed % 7 == 1 && attempt == 0) {
      limited.insert(seed);
      reply.status = 429;
      reply.headers = {{"Retry-After", "1"}, {"retry-after-ms", "50"}};
    }
    return reply;
  });
  const test::TempDir scratch("turnrl_test_eval_faults");
  const std::filesystem::path dir = scratch.path();
  const std::string config = (dir / "sweep.yaml").string();
  constexpr int kEpisodes = 12;
  std::ofstream(config) << "output_dir: " << (dir / "out").string() << "\nenv:\n  id: [babyai/goto]\n"
                        << "episodes_per_task: " << kEpisodes << "\nseed: 3\nparallel_episodes: 6\nturn: {max_turns: 4}\n"
                        << "models:\n  - {name: api, type: http, base_url: \"" << server.base_url()
                        << "\", model: m, timeout: 5, retries: 1, backoff: 0.01, concurrency: 6}\n";
  // Lock-step first: a failed request still costs only its own episode the turn.
  const auto first = test::run_turnrl("eval --config " + config + " --set lock_step=true");
  CHECK_MESSAGE(first.exit_code == 1, first.output);  // unfinished episodes remain
  CHECK(first.output.find("unfinished") != std::string::npos);

  // Nothing lost: every episode has a record, finished or ended with its error.
  std::set<int> unfinished, finished;
  for (const auto& line : split(read(dir / "out/episodes.jsonl"), '\n')) {
    const auto record = nlohmann::json::parse(line);
    const int episode = record.at("episode").get<int>();
    if (record.contains("error")) {
      CHECK(record.at("error").get<std::string>().find("HTTP 503") != std::string::npos);
      CHECK(record.at("turns").back().contains("error"));
      const uint64_t last_request = trainer::episode_turn_seed(record.at("seed").get<uint64_t>(), static_cast<int>(record.at("turns").size()) - 1);
      CHECK(last_request % 5 == 0);  // its own request failed, not another episode's of the turn
      unfinished.insert(episode);
    } else {
      finished.insert(episode);
    }
  }
  CHECK(unfinished.size() + finished.size() == static_cast<size_t>(kEpisodes));
  CHECK_FALSE(unfinished.empty());
  CHECK_FALSE(finished.empty());
  for (const auto& [seed, count] : attempts) CHECK(count == (seed % 5 == 0 ? 2 : limited.count(seed) ? 2 : 1));
  CHECK_FALSE(limited.empty());  // and each was asked again, above
  size_t summarized = 0;
  for (const auto& row : split(read(dir / "out/summary.csv"), '\n')) {
    const auto cells = split(row, ',');
    if (cells.size() >= 10 && cells[2] == "babyai/goto") summarized = std::stoul(cells[3]);
  }
  CHECK(summarized == finished.size());  // unfinished episodes are left out of the summaries

  failing = false;
  const size_t lines_before = split(read(dir / "out/episodes.jsonl"), '\n').size();
  const auto second = test::run_turnrl("eval --config " + config);
  REQUIRE_MESSAGE(second.exit_code == 0, second.output);
  const auto lines = split(read(dir / "out/episodes.jsonl"), '\n');
  std::set<int> replayed;
  for (size_t i = lines_before; i < lines.size(); ++i) {
    const auto record = nlohmann::json::parse(lines[i]);
    CHECK_FALSE(record.contains("error"));
    CHECK(replayed.insert(record.at("episode").get<int>()).second);
  }
  CHECK(replayed == unfinished);
  const auto third = test::run_turnrl("eval --config " + config);
  REQUIRE_MESSAGE(third.exit_code == 0, third.output);
  CHECK(split(read(dir / "out/episodes.jsonl"), '\n').size() == lines.size());  // nothing left to play
}

TEST_CASE("eval sweep: a model's requests_per_minute paces its requests; budgets, prices and the prefix cache refused where they cannot apply") {
  std::vector<std::chrono::steady_clock::time_point> arrivals;  // the stub's thread; read after the run
  serve::OpenAiStubServer server([&](int, const nlohmann::json&) {
    arrivals.push_back(std::chrono::steady_clock::now());
    return serve::ChatStubReply{200, "go forward", 0};
  });
  const test::TempDir scratch("turnrl_test_eval_budget");
  const std::filesystem::path dir = scratch.path();
  const std::string config = (dir / "sweep.yaml").string();
  std::ofstream(config) << "output_dir: " << (dir / "out").string() << "\nenv:\n  id: [babyai/goto]\n"
                        << "episodes_per_task: 3\nparallel_episodes: 3\nturn: {max_turns: 3}\n"
                        << "models:\n  - {name: api, type: http, base_url: \"" << server.base_url()
                        << "\", model: m, concurrency: 3, requests_per_minute: 600}\n";
  const auto run = test::run_turnrl("eval --config " + config);
  REQUIRE_MESSAGE(run.exit_code == 0, run.output);
  REQUIRE(arrivals.size() >= 4u);
  // Sends are 100 ms apart; on a loaded machine one arrival may come late and the next on time, so
  // the span is checked, not each gap.
  CHECK(arrivals.back() - arrivals.front() >= std::chrono::milliseconds(90) * static_cast<int>(arrivals.size() - 1));

  for (const std::string key : {"requests_per_minute: 60", "tokens_per_minute: 1000", "usd_per_million_prompt_tokens: 1", "prefix_cache_mb: 64"}) {
    std::ofstream(config) << "env:\n  id: [babyai/goto]\nmodels: [{name: r, type: random, " << key << "}]\n";
    const auto refused = test::run_turnrl("eval --config " + config);
    CHECK(refused.exit_code != 0);
    CHECK_MESSAGE(refused.output.find("models[0]." + key.substr(0, key.find(':'))) != std::string::npos, refused.output);
  }
  std::ofstream(config) << "env:\n  id: [babyai/goto]\nmodels: [{name: h, type: http, base_url: \"http://127.0.0.1:1/v1\", model: m, "
                        << "tokens_per_minute: -5}]\n";
  CHECK(test::run_turnrl("eval --config " + config).output.find("models[0].tokens_per_minute") != std::string::npos);
}

TEST_CASE("eval sweep with repeats: K seeds per episode slot, every repeat recorded and resumed; the summary's spread matches") {
  const test::TempDir scratch("turnrl_test_eval_repeats");
  const std::filesystem::path dir = scratch.path();
  const std::string config = (dir / "sweep.yaml").string();
  std::ofstream(config) << "output_dir: " << (dir / "out").string() << "\nenv:\n  id: [babyai/goto, babyai/open]\n"
                        << "episodes_per_task: 3\nseed: 10\nrepeats: 2\nturn: {max_turns: 12}\nmodels: [{name: r, type: random}]\n";
  const auto first = test::run_turnrl("eval --config " + config);
  REQUIRE_MESSAGE(first.exit_code == 0, first.output);
  const auto jsonl = dir / "out/episodes.jsonl";
  std::set<std::tuple<std::string, int, int>> slots;
  for (const auto& line : split(read(jsonl), '\n')) {
    const auto record = nlohmann::json::parse(line);
    const int episode = record.at("episode"), repeat = record.at("repeat");
    CHECK(record.at("seed").get<int>() == 10 + repeat * 3 + episode);
    CHECK(slots.emplace(record.at("task"), episode, repeat).second);
  }
  CHECK(slots.size() == 2u * 3 * 2);

  // A torn record of repeat 1 is played again, and only it.
  const auto lines = split(read(jsonl), '\n');
  std::string kept;
  std::string dropped;
  for (const auto& line : lines) {
    const auto record = nlohmann::json::parse(line);
    if (dropped.empty() && record.at("repeat") == 1) dropped = line;
    else kept += line + "\n";
  }
  std::ofstream(jsonl, std::ios::trunc) << kept;
  const auto second = test::run_turnrl("eval --config " + config);
  REQUIRE_MESSAGE(second.exit_code == 0, second.output);
  const auto after = split(read(jsonl), '\n');
  REQUIRE(after.size() == lines.size());
  const auto replayed = nlohmann::json::parse(after.back()), original = nlohmann::json::parse(dropped);
  CHECK(replayed.at("repeat") == 1);
  CHECK(replayed.at("episode") == original.at("episode"));
  CHECK(replayed.at("task") == original.at("task"));
  CHECK(replayed.at("seed") == original.at("seed"));

  // --repeats 3 plays exactly the third repeat's episodes; the spread is the std of the repeats' means.
  const auto third = test::run_turnrl("eval --config " + config + " --repeats 3");
  REQUIRE_MESSAGE(third.exit_code == 0, third.output);
  const auto all = split(read(jsonl), '\n');
  CHECK(all.size() == 2u * 3 * 3);
  std::map<int, std::vector<double>> goto_by_repeat;
  for (const auto& line : all) {
    const auto record = nlohmann::json::parse(line);
    if (record.at("task") == "babyai/goto") goto_by_repeat[record.at("repeat")].push_back(100 * record.at("progression").get<double>());
  }
  REQUIRE(goto_by_repeat.size() == 3u);
  std::vector<double> means;
  for (const auto& [repeat, values] : goto_by_repeat) means.push_back((values[0] + values[1] + values[2]) / 3);
  const double mean = (means[0] + means[1] + means[2]) / 3;
  const double spread = std::sqrt(((means[0] - mean) * (means[0] - mean) + (means[1] - mean) * (means[1] - mean) +
                                   (means[2] - mean) * (means[2] - mean)) / 2);
  bool found = false;
  for (const auto& row : split(read(dir / "out/summary.csv"), '\n')) {
    const auto cells = split(row, ',');
    if (cells.size() < 8 || cells[2] != "babyai/goto") continue;
    found = true;
    CHECK(cells[3] == "9");
    CHECK(cells[6] == "3");
    CHECK(std::stod(cells[7]) == doctest::Approx(spread).epsilon(1e-3));
  }
  CHECK(found);
  CHECK(test::run_turnrl("eval --config " + config + " --repeats 0").exit_code != 0);
}

namespace {

/** BALROG's collect_and_summarize_results, as its utils.py reads a run folder: every episode JSON
 *  under each env folder, progression means and SEs per env, the overall mean of env means. */
nlohmann::json balrog_collect(const std::filesystem::path& run) {
  std::map<std::string, std::vector<nlohmann::json>> by_env;
  for (const auto& env_dir : std::filesystem::directory_iterator(run)) {
    if (!env_dir.is_directory()) continue;
    for (const auto& file : std::filesystem::recursive_directory_iterator(env_dir.path())) {
      const std::string name = file.path().filename().string();
      if (name.ends_with(".json") && !name.ends_with("_summary.json")) {
        by_env[env_dir.path().filename().string()].push_back(nlohmann::json::parse(read(file.path())));
      }
    }
  }
  nlohmann::json out = {{"environments", nlohmann::json::object()}, {"total_input_tokens", 0}, {"total_output_tokens", 0}};
  double mean_sum = 0.0, se_squares = 0.0;
  for (const auto& [env, episodes] : by_env) {
    double sum = 0.0, squares = 0.0;
    for (const auto& e : episodes) sum += e.at("progression").get<double>();
    const double mean = sum / episodes.size();
    for (const auto& e : episodes) squares += std::pow(e.at("progression").get<double>() - mean, 2);
    const double se = episodes.size() > 1 ? std::sqrt(squares / episodes.size()) / std::sqrt(episodes.size()) : 0.0;
    out["environments"][env] = {{"progression_percentage", 100 * mean}, {"standard_error", 100 * se}, {"episodes_played", episodes.size()}};
    for (const auto& e : episodes) {
      out["total_input_tokens"] = out["total_input_tokens"].get<size_t>() + e.at("input_tokens").get<size_t>();
      out["total_output_tokens"] = out["total_output_tokens"].get<size_t>() + e.at("output_tokens").get<size_t>();
    }
    mean_sum += 100 * mean;
    se_squares += 100 * se * 100 * se;
  }
  out["average_progress"] = mean_sum / by_env.size();
  out["standard_error"] = std::sqrt(se_squares) / by_env.size();
  return out;
}

}  // namespace

TEST_CASE("eval sweep in BALROG's layout: a run folder per model with its episode files and summaries, as BALROG's tools read them") {
  serve::OpenAiStubServer server([](int index, const nlohmann::json&) {
    return serve::ChatStubReply{200, index % 4 == 0 ? "dance" : "go forward", 0};  // some invalid: failed candidates
  });
  const test::TempDir scratch("turnrl_test_eval_balrog");
  const std::filesystem::path dir = scratch.path();
  const std::string config = (dir / "sweep.yaml").string();
  std::ofstream(config) << "output_dir: " << (dir / "out").string() << "\nenv:\n  id: [babyai/goto, babyai/open, babaisai/goto_win, crafter/balrog]\n"
                        << "episodes_per_task: 2\nrepeats: 2\nseed: 4\nturn: {max_turns: 5}\n"
                        << "models:\n  - {name: r, type: random}\n  - {name: org/api, type: http, base_url: \"" << server.base_url()
                        << "\", model: m-1, temperature: 0.5}\n";
  const auto run = test::run_turnrl("eval --config " + config);
  REQUIRE_MESSAGE(run.exit_code == 0, run.output);

  const std::map<std::string, std::string> task_names = {{"babyai/goto", "BabyAI-MixedTrainLocal-v0/goto"},
                                                         {"babyai/open", "BabyAI-MixedTrainLocal-v0/open"},
                                                         {"babaisai/goto_win", "env/goto_win"},
                                                         {"crafter/balrog", "default"}};
  const auto lines = split(read(dir / "out/episodes.jsonl"), '\n');
  REQUIRE(lines.size() == 2u * 4 * 2 * 2);
  for (const auto& line : lines) {
    const auto record = nlohmann::json::parse(line);
    const std::string task = task_names.at(record.at("task"));
    const std::string folder = record.at("model") == "r" ? "r" : "org_api";
    const int index = record.at("repeat").get<int>() * 2 + record.at("episode").get<int>();
    const auto stem = dir / "out/balrog" / folder / record.at("env").get<std::string>() / task / (task + "_run_0" + std::to_string(index));
    REQUIRE_MESSAGE(std::filesystem::exists(stem.string() + ".json"), stem.string());
    const auto episode = nlohmann::json::parse(read(stem.string() + ".json"));
    CHECK(episode.at("task") == task);
    CHECK(episode.at("progression") == record.at("progression"));
    CHECK(episode.at("num_steps") == record.at("steps"));
    CHECK(episode.at("episode_return") == record.at("return"));
    CHECK(episode.at("seed") == record.at("seed"));
    CHECK(episode.at("input_tokens") == record.at("prompt_tokens"));
    CHECK(episode.at("output_tokens") == record.at("completion_tokens"));
    int actions = 0, invalid = 0;
    for (const auto& [action, count] : episode.at("action_frequency").items()) actions += count.get<int>();
    for (const auto& turn : record.at("turns")) invalid += !turn.at("valid").get<bool>();
    CHECK(actions == record.at("steps").get<int>());
    CHECK(episode.at("failed_candidates").size() == static_cast<size_t>(invalid));
    CHECK(episode.contains("done") == record.at("terminated").get<bool>());  // 5 turns: only a win ends one early
    CHECK(episode.at("agent").at("type") == "naive");
    if (record.at("env") == "crafter") CHECK(episode.at("score") == episode.at("achievements").size());
    // Python's csv dialect: rows end in \r\n; the observations' own line breaks are \n inside quotes.
    const auto lines_of_csv = split(read(stem.string() + ".csv"), '\n');
    CHECK(lines_of_csv.at(0) == "Step,Action,Reasoning,Observation,Reward,Done\r");
    const auto rows = std::count_if(lines_of_csv.begin(), lines_of_csv.end(), [](const std::string& l) { return l.ends_with("\r"); });
    CHECK(rows == 1 + record.at("steps").get<long>());
    CHECK(lines_of_csv.back().ends_with(episode.contains("done") ? ",True\r" : ",False\r"));
  }
  const auto api = nlohmann::json::parse(read(dir / "out/balrog/org_api/summary.json"));
  CHECK(api.at("client").at("model_id") == "m-1");
  CHECK(api.at("client").at("generate_kwargs").at("temperature") == 0.5);
  CHECK(api.at("total_input_tokens") == server.prompt_tokens());
  CHECK(api.at("total_output_tokens") == server.completion_tokens());
  for (const std::string model : {"r", "org_api"}) {
    const auto run_dir = dir / "out/balrog" / model;
    const auto summary = nlohmann::json::parse(read(run_dir / "summary.json"));
    const auto collected = balrog_collect(run_dir);
    CHECK(summary.at("average_progress").get<double>() == doctest::Approx(collected.at("average_progress").get<double>()));
    CHECK(summary.at("standard_error").get<double>() == doctest::Approx(collected.at("standard_error").get<double>()));
    CHECK(summary.at("total_input_tokens") == collected.at("total_input_tokens"));
    REQUIRE(summary.at("environments").size() == 3u);
    for (const auto& [env, values] : collected.at("environments").items()) {
      const auto& mine = summary.at("environments").at(env);
      CHECK(mine.at("episodes_played") == values.at("episodes_played"));
      CHECK(mine.at("progression_percentage").get<double>() == doctest::Approx(values.at("progression_percentage").get<double>()));
      CHECK(mine.at("standard_error").get<double>() == doctest::Approx(values.at("standard_error").get<double>()));
      const auto env_summary = nlohmann::json::parse(read(run_dir / env / (env + "_summary.json")));
      for (const char* field : {"progression_percentage", "standard_error", "average_steps", "episodes_played", "tasks", "input_tokens", "output_tokens"}) {
        CHECK_MESSAGE(env_summary.contains(field), field);
      }
      CHECK(env_summary.at("episodes_played") == values.at("episodes_played"));
    }
    const auto babyai = nlohmann::json::parse(read(run_dir / "babyai/babyai_summary.json"));
    CHECK(babyai.at("tasks").at("BabyAI-MixedTrainLocal-v0/goto").at("episodes_played") == 4);
  }

  // An older sweep's folder (no BALROG layout) gets it on the next run, with nothing played again.
  std::filesystem::remove_all(dir / "out/balrog");
  const int requests = server.requests();
  const auto rerun = test::run_turnrl("eval --config " + config);
  REQUIRE_MESSAGE(rerun.exit_code == 0, rerun.output);
  CHECK(server.requests() == requests);
  CHECK(std::filesystem::exists(dir / "out/balrog/org_api/crafter/default/default_run_03.json"));
  CHECK(std::filesystem::exists(dir / "out/balrog/r/summary.json"));
}
