// `turnrl serve` over loopback: the OpenAI-compatible API (raw HTTP, streaming, errors), the
// project's HTTP agent against it, and an eval sweep that plays the in-process agent's episodes.
#include "torch_doctest.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "agents/http_agent.h"
#include "agents/llm_agent.h"
#include "server_process.h"
#include "temp_dir.h"
#include "test_util.h"

using namespace turnrl;
using nlohmann::json;

namespace {

namespace http = boost::beast::http;

/** A tiny preset model folder and `turnrl serve` on it, shared by the test cases of this process. */
struct Served {
  Served() {
    const auto created = test::run_turnrl("new-model --preset tiny --seed 3 --out " + model_dir());
    REQUIRE_MESSAGE(created.exit_code == 0, created.output);
    server.emplace(test::ServerProcess::Command{"serve --model " + model_dir() + " --port 0 --max-batch 4"});
    base_url = server->endpoint();
    port = std::stoi(base_url.substr(base_url.rfind(':') + 1));
    model = agents::LanguageModel::load(model_dir());
  }
  std::string model_dir() const { return dir / "tiny"; }

  test::TempDir dir{"turnrl_serve"};
  std::optional<test::ServerProcess> server;
  std::string base_url;  // http://127.0.0.1:PORT/v1
  int port = 0;
  std::shared_ptr<agents::LanguageModel> model;  // the same folder, in process
};

Served& served() {
  static Served instance;
  return instance;
}

struct HttpReply {
  unsigned status = 0;
  std::string content_type, body;
  json data() const { return json::parse(body); }
};

/** A keep-alive connection to the server. */
class Client {
 public:
  explicit Client(int port) : socket_(io_) {
    boost::asio::ip::tcp::resolver resolver(io_);
    boost::asio::connect(socket_, resolver.resolve("127.0.0.1", std::to_string(port)));
  }
  HttpReply send(http::verb verb, const std::string& target, const std::string& body = "") {
    http::request<http::string_body> request{verb, target, 11};
    request.set(http::field::host, "127.0.0.1");
    request.set(http::field::content_type, "application/json");
    request.body() = body;
    request.prepare_payload();
    http::write(socket_, request);
    http::response<http::string_body> response;
    http::read(socket_, buffer_, response);
    return {response.result_int(), std::string(response[http::field::content_type]), response.body()};
  }
  HttpReply chat(const json& body) { return send(http::verb::post, "/v1/chat/completions", body.dump()); }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

const std::vector<memory::ChatMessage> kMessages = {{"system", "you are an agent"}, {"user", "go to the red ball"}};

json chat_body(int max_tokens, double temperature, uint64_t seed) {
  json messages = json::array();
  for (const auto& m : kMessages) messages.push_back({{"role", m.role}, {"content", m.content}});
  return {{"model", "tiny"}, {"messages", messages}, {"max_tokens", max_tokens}, {"temperature", temperature}, {"seed", seed}};
}

/** The in-process model's reply for the same prompt, sampling and seed. */
agents::Generation in_process(int max_tokens, double temperature, uint64_t seed) {
  agents::SamplingParams params;
  params.max_new_tokens = max_tokens;
  params.temperature = static_cast<float>(temperature);
  params.greedy = temperature == 0.0;
  params.row_seeds = {seed};
  auto& lm = *served().model;
  return lm.generate({lm.tokenizer().encode_chat(kMessages, true)}, params)[0];
}

std::string text_of(const agents::Generation& generation) {
  std::vector<int32_t> ids = generation.ids;
  if (generation.stopped) ids.pop_back();
  return served().model->tokenizer().decode(ids);
}

/** The server-sent events of a streamed body: each `data:` payload. */
std::vector<std::string> events(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
  }
  return out;
}

}  // namespace

TEST_CASE("serve: /v1/models, chat replies equal in-process generation, n, stop, usage, keep-alive") {
  Served& s = served();
  Client client(s.port);
  const HttpReply models = client.send(http::verb::get, "/v1/models");
  REQUIRE(models.status == 200);
  CHECK(models.data()["data"][0]["id"] == "tiny");
  CHECK(client.send(http::verb::get, "/v1/models/tiny").status == 200);
  CHECK(client.send(http::verb::get, "/v1/models/other").status == 404);

  const size_t prompt_tokens = s.model->tokenizer().encode_chat(kMessages, true).size();
  for (const double temperature : {1.0, 0.0}) {
    INFO("temperature " << temperature);
    const agents::Generation want = in_process(10, temperature, 42);
    const HttpReply reply = client.chat(chat_body(10, temperature, 42));
    REQUIRE_MESSAGE(reply.status == 200, reply.body);
    CHECK(reply.content_type == "application/json");
    const json data = reply.data();
    CHECK(data["object"] == "chat.completion");
    CHECK(data["model"] == "tiny");
    REQUIRE(data["choices"].size() == 1u);
    CHECK(data["choices"][0]["message"]["role"] == "assistant");
    CHECK(data["choices"][0]["message"]["content"] == text_of(want));
    CHECK(data["choices"][0]["finish_reason"] == (want.stopped ? "stop" : "length"));
    CHECK(data["usage"]["prompt_tokens"] == prompt_tokens);
    CHECK(data["usage"]["completion_tokens"] == want.ids.size());
    CHECK(data["usage"]["total_tokens"] == prompt_tokens + want.ids.size());
  }

  // n choices: the first samples with the request's seed, the others with their own streams.
  json body = chat_body(10, 1.0, 42);
  body["n"] = 3;
  const json three = client.chat(body).data();
  REQUIRE(three["choices"].size() == 3u);
  std::set<std::string> distinct;
  for (int i = 0; i < 3; ++i) {
    CHECK(three["choices"][i]["index"] == i);
    distinct.insert(three["choices"][i]["message"]["content"].get<std::string>());
  }
  CHECK(three["choices"][0]["message"]["content"] == text_of(in_process(10, 1.0, 42)));
  CHECK(distinct.size() == 3u);
  CHECK(three["usage"]["prompt_tokens"] == prompt_tokens);
  CHECK(three["usage"]["completion_tokens"].get<size_t>() > in_process(10, 1.0, 42).ids.size());

  // A stop string: the reply ends before its first occurrence.
  const std::string full = text_of(in_process(10, 0.0, 0));
  const std::string stop = full.substr(full.find(' ', full.find(' ') + 1) + 1, 3);
  json stopped = chat_body(10, 0.0, 0);
  stopped["stop"] = {"never in the text", stop};
  const json cut = client.chat(stopped).data();
  CHECK(cut["choices"][0]["message"]["content"] == full.substr(0, full.find(stop)));
  CHECK(cut["choices"][0]["finish_reason"] == "stop");
  stopped["stop"] = stop;  // a single string works too
  CHECK(client.chat(stopped).data()["choices"][0]["message"]["content"] == full.substr(0, full.find(stop)));

  // Without max_tokens the reply may run to the end of the context.
  json unlimited = chat_body(1, 1.0, 9);
  unlimited.erase("max_tokens");
  const json long_reply = client.chat(unlimited).data();
  CHECK(long_reply["usage"]["completion_tokens"].get<size_t>() > 10u);
  CHECK(long_reply["usage"]["total_tokens"].get<int64_t>() <= s.model->context_length());
}

TEST_CASE("serve: GET /stats counts prompts that start from the prefix cache and the prefill tokens it saved") {
  Served& s = served();
  Client client(s.port);
  const size_t prompt_tokens = s.model->tokenizer().encode_chat(kMessages, true).size();
  const json before = client.send(http::verb::get, "/stats").data();
  CHECK(before["prefix_cache"]["capacity_bytes"] == uint64_t{1024} << 20);  // serve's default
  for (int i = 0; i < 2; ++i) REQUIRE(client.chat(chat_body(4, 0.0, 7)).status == 200);
  const json after = client.send(http::verb::get, "/stats").data();
  const auto delta = [&](const char* key) { return after["prefix_cache"][key].get<uint64_t>() - before["prefix_cache"][key].get<uint64_t>(); };
  CHECK(delta("lookups") == 2);
  CHECK(delta("prompt_tokens") == 2 * prompt_tokens);
  CHECK(delta("hits") >= 1);  // the second at least: the same prompt, all but its last token
  CHECK(delta("reused_tokens") >= prompt_tokens - 1);
  CHECK(after["prefix_cache"]["bytes"].get<uint64_t>() > 0);
  CHECK(after["prefill_seconds"].get<double>() > 0.0);
  CHECK(client.send(http::verb::post, "/stats").status == 405);
}

TEST_CASE("serve: streaming sends role, content and finish chunks, usage, then [DONE]; the text is the reply's") {
  Served& s = served();
  Client client(s.port);
  for (const int n : {1, 2}) {
    INFO("n " << n);
    json body = chat_body(12, 1.0, 7);
    body["n"] = n;
    const json whole = client.chat(body).data();
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    const HttpReply reply = client.chat(body);
    REQUIRE(reply.status == 200);
    CHECK(reply.content_type == "text/event-stream");
    const auto data = events(reply.body);
    REQUIRE(data.size() >= 4u);
    CHECK(data.back() == "[DONE]");
    std::map<int, std::string> text, finish;
    std::map<int, int> roles;
    json usage;
    for (size_t i = 0; i + 1 < data.size(); ++i) {
      const json chunk = json::parse(data[i]);
      CHECK(chunk["object"] == "chat.completion.chunk");
      CHECK(chunk["id"] == json::parse(data[0])["id"]);
      CHECK(chunk["created"] == json::parse(data[0])["created"]);
      if (chunk["choices"].empty()) {
        usage = chunk["usage"];
        continue;
      }
      const json& choice = chunk["choices"][0];
      const int index = choice["index"];
      if (choice["delta"].contains("role")) ++roles[index];
      if (choice["delta"].contains("content")) text[index] += choice["delta"]["content"].get<std::string>();
      if (!choice["finish_reason"].is_null()) finish[index] = choice["finish_reason"];
    }
    for (int i = 0; i < n; ++i) {
      CHECK(roles[i] == 1);
      CHECK(text[i] == whole["choices"][i]["message"]["content"].get<std::string>());  // nlohmann 3.11.3 under C++20 has no string == json
      CHECK(finish[i] == whole["choices"][i]["finish_reason"].get<std::string>());
    }
    CHECK(usage == whole["usage"]);
  }
  // The connection still serves a plain request after a stream.
  CHECK(client.chat(chat_body(2, 1.0, 1)).status == 200);

  // A client that leaves in the middle of a stream: its choices stop, the server carries on.
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.port)});
    json body = chat_body(900, 1.0, 3);
    body["stream"] = true;
    body["n"] = 4;
    http::request<http::string_body> request{http::verb::post, "/v1/chat/completions", 11};
    request.set(http::field::host, "127.0.0.1");
    request.body() = body.dump();
    request.prepare_payload();
    http::write(socket, request);
    char first[256];
    CHECK(socket.read_some(boost::asio::buffer(first)) > 0);
  }
  const HttpReply after = client.chat(chat_body(3, 0.0, 0));
  REQUIRE(after.status == 200);
  CHECK(after.data()["choices"][0]["message"]["content"] == text_of(in_process(3, 0.0, 0)));
}

TEST_CASE("serve: bad requests get 400 with a JSON error naming the problem; unknown paths 404, wrong methods 405") {
  Served& s = served();
  Client client(s.port);
  const json good = chat_body(4, 1.0, 1);
  auto with = [&](const std::string& key, const json& value) {
    json body = good;
    body[key] = value;
    return body.dump();
  };
  json no_messages = good;
  no_messages.erase("messages");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{not json", "not valid JSON"},
      {"[1, 2]", "JSON object"},
      {no_messages.dump(), "'messages' is required"},
      {with("messages", "hello"), "'messages' must be a non-empty array"},
      {with("messages", json::array()), "'messages' must be a non-empty array"},
      {with("messages", {{{"role", "robot"}, {"content", "x"}}}), "messages[0].role"},
      {with("messages", {{{"role", "user"}, {"content", 5}}}), "messages[0].content"},
      {with("messages", {{{"role", "user"}}}), "messages[0].content is required"},
      {with("temperature", "hot"), "'temperature' must be a number"},
      {with("temperature", 3), "'temperature' must be in"},
      {with("top_p", 0), "'top_p' must be in"},
      {with("max_tokens", 0), "'max_tokens' must be between"},
      {with("max_tokens", 2.5), "'max_tokens' must be an integer"},
      {with("n", 100), "'n' must be between"},
      {with("seed", "s"), "'seed' must be an integer"},
      {with("stop", json::array({1})), "'stop' must be a string or an array of strings"},
      {with("stop", ""), "'stop' strings must not be empty"},
      {with("stream", "yes"), "'stream' must be a boolean"},
      {with("model", 7), "'model' must be a string"},
  };
  for (const auto& [body, message] : cases) {
    INFO(body);
    const HttpReply reply = client.send(http::verb::post, "/v1/chat/completions", body);
    CHECK(reply.status == 400);
    CHECK(reply.content_type == "application/json");
    const json error = json::parse(reply.body, nullptr, false);
    REQUIRE(error.is_object());
    CHECK(error["error"]["type"] == "invalid_request_error");
    CHECK(error["error"]["message"].get<std::string>().find(message) != std::string::npos);
  }
  json long_prompt = good;
  std::string words;
  for (int i = 0; i < 1100; ++i) words += "ball ";
  long_prompt["messages"] = {{{"role", "user"}, {"content", words}}};
  const HttpReply too_long = client.chat(long_prompt);
  CHECK(too_long.status == 400);
  CHECK(too_long.body.find("context") != std::string::npos);
  CHECK(client.send(http::verb::get, "/v1/completions").status == 404);
  CHECK(client.send(http::verb::get, "/v1/chat/completions").status == 405);
  CHECK(client.send(http::verb::post, "/v1/models").status == 405);
  // Any model name is accepted; the reply names the served one.
  json other = good;
  other["model"] = "gpt-4o";
  const HttpReply accepted = client.chat(other);
  REQUIRE(accepted.status == 200);
  CHECK(accepted.data()["model"] == "tiny");
}

TEST_CASE("serve: the project's HTTP agent gets the in-process LLM agent's replies for the same seeds") {
  Served& s = served();
  agents::HttpAgentConfig config;
  config.base_url = s.base_url;
  config.model = "tiny";
  config.temperature = 1.0;
  config.max_tokens = 12;
  config.concurrency = 4;
  agents::HttpAgent http_agent(config);
  agents::SamplingParams params;
  params.temperature = 1.0f;
  params.max_new_tokens = 12;
  agents::LlmAgent local(s.model, params);
  std::vector<agents::AgentPrompt> prompts;
  for (const std::string text : {"go to the red ball", "pick up the key", "open the door", "turn left", "you see a wall"}) {
    for (uint64_t seed : {1ULL, 2ULL, 0xFFFFFFFFFFFFFFF0ULL}) {  // a seed beyond int64 travels as its signed image
      agents::AgentPrompt prompt;
      prompt.messages = {{"user", text}};
      prompt.seed = seed;
      prompts.push_back(prompt);
    }
  }
  const auto remote = http_agent.act(prompts);
  const auto here = local.act(prompts);
  REQUIRE(remote.size() == here.size());
  for (size_t i = 0; i < prompts.size(); ++i) CHECK(remote[i].text == here[i].text);
  CHECK(remote[0].text != remote[1].text);
}

TEST_CASE("serve: an eval sweep through the HTTP agent plays the in-process agent's episodes, sampled and greedy") {
  Served& s = served();
  const std::filesystem::path out = s.dir / "eval";
  const std::string config = s.dir / "sweep.yaml";
  std::ofstream(config) << "output_dir: " << out.string() << "\n"
                        << "env:\n  id: [babyai/goto, babyai/pickup]\nepisodes_per_task: 3\nseed: 11\nparallel_episodes: 4\n"
                        << "turn: {max_turns: 5, history: 2}\n"
                        << "models:\n"
                        << "  - {name: local, type: llm, path: " << s.model_dir() << ", temperature: 1.0, max_response_tokens: 8}\n"
                        << "  - {name: served, type: http, base_url: \"" << s.base_url
                        << "\", model: tiny, temperature: 1.0, max_response_tokens: 8}\n"
                        << "  - {name: local-greedy, type: llm, path: " << s.model_dir() << ", temperature: 0, max_response_tokens: 8}\n"
                        << "  - {name: served-greedy, type: http, base_url: \"" << s.base_url
                        << "\", model: tiny, temperature: 0, max_response_tokens: 8}\n";
  const auto run = test::run_turnrl("eval --config " + config);
  REQUIRE_MESSAGE(run.exit_code == 0, run.output);
  std::map<std::tuple<std::string, std::string, int>, json> episodes;  // model, task, episode
  std::ifstream in(out / "episodes.jsonl");
  for (std::string line; std::getline(in, line);) {
    const json record = json::parse(line);
    episodes[{record["model"], record["task"], record["episode"]}] = record;
  }
  REQUIRE(episodes.size() == 4u * 2 * 3);
  size_t turns = 0;
  for (const auto& [local, served_name] : {std::pair{"local", "served"}, std::pair{"local-greedy", "served-greedy"}}) {
    for (const std::string task : {"babyai/goto", "babyai/pickup"}) {
      for (int e = 0; e < 3; ++e) {
        INFO(local << " " << task << " " << e);
        const json& a = episodes.at({local, task, e});
        const json& b = episodes.at({served_name, task, e});
        REQUIRE(a["turns"].size() == b["turns"].size());
        for (size_t t = 0; t < a["turns"].size(); ++t) {
          CHECK(a["turns"][t]["prompt"] == b["turns"][t]["prompt"]);
          CHECK(a["turns"][t]["reply"] == b["turns"][t]["reply"]);
          CHECK(a["turns"][t]["action"] == b["turns"][t]["action"]);
          ++turns;
        }
        CHECK(a["return"] == b["return"]);
      }
    }
  }
  CHECK(turns >= 12u);
}
