#pragma once
// Minigrid's world: object kinds and colours with their integer codes, and a grid of cells
// that refer to objects by index (so instructions can track object identity like Python does).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace turnrl::envs::babyai {

enum class ObjectType : uint8_t { kUnseen = 0, kEmpty = 1, kWall = 2, kFloor = 3, kDoor = 4, kKey = 5, kBall = 6, kBox = 7 };
enum class Color : uint8_t { kRed = 0, kGreen = 1, kBlue = 2, kPurple = 3, kYellow = 4, kGrey = 5 };

/** Minigrid's COLOR_NAMES, sorted by name: random colour draws index this list. */
inline constexpr std::array<Color, 6> kSortedColors = {Color::kBlue, Color::kGreen, Color::kGrey,
                                                       Color::kPurple, Color::kRed, Color::kYellow};

std::string_view type_name(ObjectType type);
std::string_view color_name(Color color);

struct Pos {
  int x = -1;
  int y = -1;
  bool operator==(const Pos&) const = default;
};

inline constexpr std::array<Pos, 4> kDirVec = {Pos{1, 0}, Pos{0, 1}, Pos{-1, 0}, Pos{0, -1}};

inline bool next_to(Pos a, Pos b) { return std::abs(a.x - b.x) + std::abs(a.y - b.y) == 1; }

/** A movable or stateful object (doors, keys, balls, boxes). Walls are not objects. */
struct WorldObject {
  ObjectType type = ObjectType::kBall;
  Color color = Color::kRed;
  bool is_open = false;
  bool is_locked = false;
  Pos cur_pos;  // (-1, -1) while carried

  bool can_pickup() const { return type == ObjectType::kKey || type == ObjectType::kBall || type == ObjectType::kBox; }
  bool see_behind() const { return type != ObjectType::kDoor || is_open; }
  bool can_overlap() const { return type == ObjectType::kDoor && is_open; }
  /** Door state code: open 0, closed 1, locked 2; 0 for everything else. */
  uint8_t state_code() const;
};

/** (type, colour, state) as Minigrid encodes a cell. */
struct CellCode {
  uint8_t type = 0, color = 0, state = 0;
};

/** Width x height cells; each is empty, a wall, or the index of an object in `objects`. */
class Grid {
 public:
  static constexpr int16_t kEmpty = -1;
  static constexpr int16_t kWall = -2;

  Grid() = default;
  Grid(int width, int height) : width_(width), height_(height), cells_(width * height, kEmpty) {}

  int width() const { return width_; }
  int height() const { return height_; }
  bool contains(Pos p) const { return p.x >= 0 && p.y >= 0 && p.x < width_ && p.y < height_; }
  int16_t at(Pos p) const { return cells_[p.y * width_ + p.x]; }
  void set(Pos p, int16_t cell) { cells_[p.y * width_ + p.x] = cell; }
  void clear() { std::fill(cells_.begin(), cells_.end(), kEmpty); }
  /** Minigrid's wall_rect: the border of a rectangle. */
  void wall_rect(Pos top, int w, int h);

 private:
  int width_ = 0;
  int height_ = 0;
  std::vector<int16_t> cells_;
};

CellCode encode_cell(int16_t cell, const std::vector<WorldObject>& objects);

/** Six hex digits per cell, as the golden files write grids and views. */
void append_hex(std::string& out, CellCode code);

}  // namespace turnrl::envs::babyai
