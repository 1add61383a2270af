#include "envs/babyai/world.h"

namespace turnrl::envs::babyai {

int16_t World::add_object(ObjectType type, Color color) {
  WorldObject obj;
  obj.type = type;
  obj.color = color;
  objects.push_back(obj);
  return static_cast<int16_t>(objects.size() - 1);
}

void World::apply_action(int action) {
  const Pos front = front_pos();
  const int16_t front_cell = grid.at(front);
  switch (action) {
    case kTurnLeft:
      agent_dir = (agent_dir + 3) % 4;
      break;
    case kTurnRight:
      agent_dir = (agent_dir + 1) % 4;
      break;
    case kForward:
      if (can_enter(front)) agent_pos = front;
      break;
    case kPickup:
      if (front_cell >= 0 && objects[front_cell].can_pickup() && carrying == Grid::kEmpty) {
        carrying = front_cell;
        objects[front_cell].cur_pos = {-1, -1};
        grid.set(front, Grid::kEmpty);
      }
      break;
    case kDrop:
      if (front_cell == Grid::kEmpty && carrying != Grid::kEmpty) {
        grid.set(front, carrying);
        objects[carrying].cur_pos = front;
        carrying = Grid::kEmpty;
      }
      break;
    case kToggle:
      if (front_cell >= 0) {
        WorldObject& obj = objects[front_cell];
        if (obj.type == ObjectType::kDoor) {
          if (obj.is_locked) {
            // A locked door opens only for a carried key of its colour (the key stays carried).
            if (carrying != Grid::kEmpty && objects[carrying].type == ObjectType::kKey &&
                objects[carrying].color == obj.color) {
              obj.is_locked = false;
              obj.is_open = true;
            }
          } else {
            obj.is_open = !obj.is_open;
          }
        } else if (obj.type == ObjectType::kBox) {
          grid.set(front, Grid::kEmpty);  // a box is replaced by its (empty) contents
        }
      }
      break;
    default:
      break;
  }
}

Pos World::view_cell(Pos v) const {
  const Pos d = kDirVec[agent_dir];
  const Pos r = {-d.y, d.x};
  const int forward = kViewAgent.y - v.y, right = v.x - kViewAgent.x;
  return {agent_pos.x + d.x * forward + r.x * right, agent_pos.y + d.y * forward + r.y * right};
}

ViewImage World::view() const {
  // Cells of the view square, rotated so the agent looks up; outside the grid reads as wall.
  std::array<std::array<int16_t, kViewSize>, kViewSize> cells{};
  for (int vx = 0; vx < kViewSize; ++vx) {
    for (int vy = 0; vy < kViewSize; ++vy) {
      const Pos p = view_cell({vx, vy});
      cells[vx][vy] = grid.contains(p) ? grid.at(p) : Grid::kWall;
    }
  }
  auto see_behind = [&](int16_t cell) {
    return cell == Grid::kEmpty || (cell >= 0 && objects[cell].see_behind());
  };
  // Minigrid's process_vis: sweep rows bottom-up, left-to-right then right-to-left.
  std::array<std::array<bool, kViewSize>, kViewSize> visible{};
  visible[kViewAgent.x][kViewAgent.y] = true;
  for (int j = kViewSize - 1; j >= 0; --j) {
    for (int i = 0; i < kViewSize - 1; ++i) {
      if (!visible[i][j] || !see_behind(cells[i][j])) continue;
      visible[i + 1][j] = true;
      if (j > 0) {
        visible[i + 1][j - 1] = true;
        visible[i][j - 1] = true;
      }
    }
    for (int i = kViewSize - 1; i >= 1; --i) {
      if (!visible[i][j] || !see_behind(cells[i][j])) continue;
      visible[i - 1][j] = true;
      if (j > 0) {
        visible[i - 1][j - 1] = true;
        visible[i][j - 1] = true;
      }
    }
  }
  cells[kViewAgent.x][kViewAgent.y] = carrying;  // the agent sees what it carries
  ViewImage image{};
  for (int x = 0; x < kViewSize; ++x) {
    for (int y = 0; y < kViewSize; ++y) {
      if (visible[x][y]) image[x][y] = encode_cell(cells[x][y], objects);
    }
  }
  return image;
}

namespace {

std::string steps(int n) { return std::to_string(n) + (n > 1 ? " steps" : " step"); }

/** First non-empty, seen cell along a view line; a description only if it is a wall. */
template <typename Next>
void describe_wall(const ViewImage& image, Pos start, Next next, const char* direction, int origin,
                   bool vertical, std::vector<std::string>& out) {
  for (Pos p = start; p.x >= 0 && p.y >= 0 && p.x < kViewSize && p.y < kViewSize; p = next(p)) {
    const uint8_t type = image[p.x][p.y].type;
    if (type == static_cast<uint8_t>(ObjectType::kUnseen) || type == static_cast<uint8_t>(ObjectType::kEmpty)) continue;
    if (type == static_cast<uint8_t>(ObjectType::kWall)) {
      out.push_back("You see a wall " + steps(std::abs((vertical ? p.y : p.x) - origin)) + " " + direction);
    }
    return;
  }
}

/** An object's words in a description line: "closed red door 1 step left and 2 steps forward". */
std::string object_phrase(CellCode code, int right, int forward) {
  const auto type = static_cast<ObjectType>(code.type);
  std::string text;
  if (type == ObjectType::kDoor) {
    static constexpr const char* kStates[] = {"open", "closed", "locked"};
    text += std::string(kStates[code.state]) + " ";
  }
  text += std::string(color_name(static_cast<Color>(code.color))) + " " + std::string(type_name(type)) + " ";
  if (right == 0) {
    text += steps(forward) + " forward";
  } else {
    text += steps(std::abs(right)) + (right > 0 ? " right" : " left");
    if (forward != 0) text += " and " + steps(forward) + " forward";
  }
  return text;
}

}  // namespace

std::vector<std::string> World::descriptions() const {
  const ViewImage image = view();
  std::vector<std::string> out;
  if (carrying != Grid::kEmpty) {
    const WorldObject& obj = objects[carrying];
    out.push_back("You carry a " + std::string(color_name(obj.color)) + " " + std::string(type_name(obj.type)));
  }
  const int ax = kViewAgent.x, ay = kViewAgent.y;
  describe_wall(image, {ax, ay - 1}, [](Pos p) { return Pos{p.x, p.y - 1}; }, "forward", ay, true, out);
  describe_wall(image, {ax - 1, ay}, [](Pos p) { return Pos{p.x - 1, p.y}; }, "left", ax, false, out);
  describe_wall(image, {ax + 1, ay}, [](Pos p) { return Pos{p.x + 1, p.y}; }, "right", ax, false, out);

  for (int i = 0; i < kViewSize; ++i) {
    for (int j = 0; j < kViewSize; ++j) {
      const CellCode code = image[i][j];
      if (code.type <= static_cast<uint8_t>(ObjectType::kWall) || (i == ax && j == ay)) continue;
      out.push_back("You see a " + object_phrase(code, i - ax, ay - j));
    }
  }
  return out;
}

std::string World::phrase_at(Pos cell) const {
  const Pos d = kDirVec[agent_dir];
  const Pos offset = {cell.x - agent_pos.x, cell.y - agent_pos.y};
  return object_phrase(encode_cell(grid.at(cell), objects), offset.x * -d.y + offset.y * d.x, offset.x * d.x + offset.y * d.y);
}

}  // namespace turnrl::envs::babyai
