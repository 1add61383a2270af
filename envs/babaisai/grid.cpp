#include "envs/babaisai/grid.h"

#include <stdexcept>
#include <string>

namespace turnrl::envs::babaisai {

Grid::Grid(int width, int height) { reset(width, height); }

void Grid::reset(int width, int height) {
  if (width < 3 || height < 3) {
    throw std::invalid_argument("babaisai grid: size " + std::to_string(width) + "x" + std::to_string(height) +
                                " is below 3x3");
  }
  width_ = width;
  height_ = height;
  cells_.resize(static_cast<size_t>(width) * height);
  for (auto& cell : cells_) cell.clear();
}

void Grid::pop(Pos p) {
  auto& cell = cells_[index(p)];
  if (!cell.empty()) cell.pop_back();
}

}  // namespace turnrl::envs::babaisai
