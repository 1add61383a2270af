#pragma once
// The tiny model folders of the shared data (models/) and their golden outputs, as the model tests read them.
#include <fstream>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torch_doctest.h"
#include "test_util.h"

namespace turnrl::test {

inline std::string model_folder(const std::string& name) { return shared_path("models/" + name); }

inline nlohmann::json model_golden(const std::string& name) {
  std::ifstream in(model_folder(name) + "/golden.json");
  return nlohmann::json::parse(in);
}

/** Rows of token ids (null: padding, read as 0) as a [rows, columns] tensor of `type`. */
inline torch::Tensor to_tensor(const nlohmann::json& rows, torch::ScalarType type) {
  std::vector<int64_t> flat;
  for (const auto& row : rows) {
    for (const auto& v : row) flat.push_back(v.is_null() ? 0 : v.get<int64_t>());
  }
  return torch::tensor(flat, torch::kInt64).view({static_cast<int64_t>(rows.size()), -1}).to(type);
}

/** A golden case's prompts: each row's input ids where its attention mask is 1. */
inline std::vector<std::vector<int32_t>> golden_prompts(const nlohmann::json& g) {
  std::vector<std::vector<int32_t>> prompts;
  for (size_t b = 0; b < g["input_ids"].size(); ++b) {
    std::vector<int32_t> row;
    for (size_t t = 0; t < g["input_ids"][b].size(); ++t) {
      if (g["attention_mask"][b][t].get<int>() == 1) row.push_back(g["input_ids"][b][t].get<int32_t>());
    }
    prompts.push_back(row);
  }
  return prompts;
}

/** Nested arrays of numbers, flattened in order, as a float tensor. */
inline torch::Tensor to_floats(const nlohmann::json& values) {
  std::vector<float> flat;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& v) {
    if (v.is_array()) {
      for (const auto& x : v) walk(x);
    } else {
      flat.push_back(v.get<float>());
    }
  };
  walk(values);
  return torch::tensor(flat);
}

}  // namespace turnrl::test
