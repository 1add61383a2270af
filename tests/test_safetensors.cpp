// Malformed model files: every case must give an error naming the file (and tensor), never a crash
// or an out-of-bounds read (this test also runs in the ASan/UBSan build).
#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "agents/model/model_config.h"
#include "agents/model/safetensors.h"
#include "temp_dir.h"

using namespace turnrl::agents;

namespace {

/** This process's scratch folder for the files the cases write. */
const std::string& scratch() {
  static const turnrl::test::TempDir dir("turnrl_safetensors");
  return dir.path();
}

std::string write_raw(const std::string& name, const std::string& header, size_t data_bytes, int64_t claimed_len = -1) {
  const std::string path = scratch() + "/" + name;
  std::ofstream out(path, std::ios::binary);
  const uint64_t len = claimed_len >= 0 ? static_cast<uint64_t>(claimed_len) : header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xFF));
  out << header << std::string(data_bytes, '\0');
  return path;
}

void expect_error(const std::string& path, const std::string& fragment) {
  try {
    SafetensorsFile::load(path);
    FAIL("no error for " << path);
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    CHECK_MESSAGE(message.find(path) != std::string::npos, message);
    CHECK_MESSAGE(message.find(fragment) != std::string::npos, message);
  }
}

}  // namespace

TEST_CASE("a written file reads back") {
  TensorToWrite t{"w", DType::kF32, {2, 3}, std::vector<uint8_t>(24, 1)};
  TensorToWrite b{"b", DType::kBF16, {3}, std::vector<uint8_t>(6, 2)};
  const std::string path = scratch() + "/ok.safetensors";
  write_safetensors(path, {t, b});
  const SafetensorsFile file = SafetensorsFile::load(path);
  CHECK(file.at("w").shape == std::vector<int64_t>{2, 3});
  CHECK(file.at("b").dtype == DType::kBF16);
  CHECK(file.at("w").data[0] == 1);
  CHECK_THROWS_WITH_AS(file.at("missing"), doctest::Contains("missing tensor 'missing'"), std::runtime_error);
}

TEST_CASE("malformed files give clear errors") {
  const std::string good = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  expect_error(write_raw("truncated.safetensors", good, 8), "outside");
  expect_error(write_raw("lying_len.safetensors", good, 16, 1 << 30), "exceeds the file size");
  expect_error(write_raw("bad_json.safetensors", "{\"w\": [", 0), "not valid JSON");
  expect_error(write_raw("dtype.safetensors", R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8), "unsupported dtype 'Q4'");
  expect_error(write_raw("size.safetensors", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "tensor 'w'");
  expect_error(write_raw("offsets.safetensors", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8), "outside");
  expect_error(write_raw("shape.safetensors", R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "non-negative");
  expect_error(write_raw("huge.safetensors", R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8), "too large");
  // Found with tests/fuzz/fuzz_safetensors: a number beyond double escaped as json::out_of_range, and behind a zero dimension, 2^64 - 1 was taken as -1.
  expect_error(write_raw("overflow.safetensors", R"({"w":1e99999})", 0), "not valid JSON");
  expect_error(write_raw("zero_then_huge.safetensors", R"({"w":{"dtype":"F32","shape":[0,18446744073709551615],"data_offsets":[0,0]}})", 0),
               "too large");
  expect_error(write_raw("entry.safetensors", R"({"w":5})", 0), "malformed entry");
  { std::ofstream(scratch() + "/tiny.safetensors") << "abc"; }
  expect_error(scratch() + "/tiny.safetensors", "truncated");
}

TEST_CASE("model config validation names the file and field") {
  const std::string path = scratch() + "/config.json";
  { std::ofstream(path) << R"({"vocab_size": 10, "hidden_size": 8})"; }
  CHECK_THROWS_WITH_AS(ModelConfig::load(path), doctest::Contains("intermediate_size"), std::runtime_error);
  { std::ofstream(path) << R"({"vocab_size": 10, "hidden_size": 8, "intermediate_size": 4, "num_hidden_layers": 1, "num_attention_heads": 3})"; }
  CHECK_THROWS_WITH_AS(ModelConfig::load(path), doctest::Contains("inconsistent"), std::runtime_error);
  { std::ofstream(path) << "{oops"; }
  CHECK_THROWS_WITH_AS(ModelConfig::load(path), doctest::Contains("invalid JSON"), std::runtime_error);
  { std::ofstream(path) << R"({"vocab_size": "many"})"; }
  CHECK_THROWS_WITH_AS(ModelConfig::load(path), doctest::Contains("vocab_size"), std::runtime_error);
  const std::string shape = R"("vocab_size": 10, "hidden_size": 8, "intermediate_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2)";
  for (const char* bad : {"-0.1", "0", "\"wide\""}) {
    INFO(bad);
    { std::ofstream(path) << "{" << shape << R"(, "initializer_range": )" << bad << "}"; }
    CHECK_THROWS_WITH_AS(ModelConfig::load(path), doctest::Contains("initializer_range"), std::runtime_error);
  }
  { std::ofstream(path) << "{" << shape << R"(, "initializer_range": 0.125})"; }
  const ModelConfig loaded = ModelConfig::load(path);
  CHECK(loaded.initializer_range == 0.125);
  CHECK(loaded.to_json()["initializer_range"] == 0.125);
  { std::ofstream(path) << "{" << shape << "}"; }
  CHECK(ModelConfig::load(path).initializer_range == 0.02);  // HF's default, as folders written before the field
}
