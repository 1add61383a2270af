#pragma once
// The grid of stacked cells: every cell is a stack of object ids, new objects go on top, and only
// the top object is seen by rules, movement, text and the observation.
#include <cstdint>
#include <vector>

#include <boost/container/small_vector.hpp>

namespace turnrl::envs::babaisai {

struct Pos {
  int x = 0;
  int y = 0;
  friend bool operator==(const Pos&, const Pos&) = default;
  Pos operator+(const Pos& o) const { return {x + o.x, y + o.y}; }
  Pos operator-(const Pos& o) const { return {x - o.x, y - o.y}; }
};

/** Direction vectors, indexed by dir: 0 right, 1 down, 2 left, 3 up. */
constexpr Pos kDirVec[4] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};

/** Index into the world's object pool. */
using ObjectId = int32_t;
constexpr ObjectId kNoObject = -1;
/** A cell's objects, bottom to top. Stacks rarely pass two, so they live inline: copying a level
 *  (the expert's search copies one per state) then allocates once instead of once per cell. */
using CellStack = boost::container::small_vector<ObjectId, 2>;

class Grid {
 public:
  Grid() = default;
  Grid(int width, int height);
  /** Empties every cell and sets the size (keeps the cells' storage for reuse). */
  void reset(int width, int height);

  int width() const { return width_; }
  int height() const { return height_; }
  int cell_count() const { return width_ * height_; }
  bool inside(Pos p) const { return p.x >= 0 && p.x < width_ && p.y >= 0 && p.y < height_; }
  int index(Pos p) const { return p.y * width_ + p.x; }
  Pos pos_of(int index) const { return {index % width_, index / width_}; }

  /** Top object, or kNoObject for an empty cell. */
  ObjectId top(int index) const { return cells_[index].empty() ? kNoObject : cells_[index].back(); }
  ObjectId top(Pos p) const { return top(index(p)); }
  /** Bottom to top. */
  const CellStack& stack(Pos p) const { return cells_[index(p)]; }
  const CellStack& stack(int index) const { return cells_[index]; }
  void push(Pos p, ObjectId id) { cells_[index(p)].push_back(id); }
  /** Removes the top object; an empty cell stays empty. */
  void pop(Pos p);

 private:
  int width_ = 0;
  int height_ = 0;
  std::vector<CellStack> cells_;
};

}  // namespace turnrl::envs::babaisai
