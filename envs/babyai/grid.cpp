#include "envs/babyai/grid.h"

namespace turnrl::envs::babyai {

std::string_view type_name(ObjectType type) {
  static constexpr std::array<std::string_view, 8> kNames = {"unseen", "empty", "wall", "floor",
                                                             "door",   "key",   "ball", "box"};
  return kNames[static_cast<int>(type)];
}

std::string_view color_name(Color color) {
  static constexpr std::array<std::string_view, 6> kNames = {"red", "green", "blue", "purple", "yellow", "grey"};
  return kNames[static_cast<int>(color)];
}

uint8_t WorldObject::state_code() const {
  if (type != ObjectType::kDoor) return 0;
  if (is_open) return 0;
  return is_locked ? 2 : 1;
}

void Grid::wall_rect(Pos top, int w, int h) {
  for (int i = 0; i < w; ++i) {
    set({top.x + i, top.y}, kWall);
    set({top.x + i, top.y + h - 1}, kWall);
  }
  for (int j = 0; j < h; ++j) {
    set({top.x, top.y + j}, kWall);
    set({top.x + w - 1, top.y + j}, kWall);
  }
}

CellCode encode_cell(int16_t cell, const std::vector<WorldObject>& objects) {
  if (cell == Grid::kEmpty) return {static_cast<uint8_t>(ObjectType::kEmpty), 0, 0};
  if (cell == Grid::kWall) return {static_cast<uint8_t>(ObjectType::kWall), static_cast<uint8_t>(Color::kGrey), 0};
  const WorldObject& obj = objects[cell];
  return {static_cast<uint8_t>(obj.type), static_cast<uint8_t>(obj.color), obj.state_code()};
}

void append_hex(std::string& out, CellCode code) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (uint8_t byte : {code.type, code.color, code.state}) {
    out.push_back(kDigits[byte >> 4]);
    out.push_back(kDigits[byte & 15]);
  }
}

}  // namespace turnrl::envs::babyai
