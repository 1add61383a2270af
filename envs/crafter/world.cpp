#include "envs/crafter/world.h"

#include <algorithm>

namespace turnrl::envs::crafter {

World::World(int width, int height) : width_(width), height_(height) { reset(0); }

void World::reset(uint32_t seed) {
  random.seed_with(seed);
  daylight = 0.0;
  materials_.assign(static_cast<size_t>(width_) * height_, Material::kNone);
  object_map_.assign(materials_.size(), 0);
  objects_.assign(1, Object{});
  live_.clear();
  live_dirty_ = false;
  chunks_.clear();
  const int chunks_x = (width_ + kChunkSize - 1) / kChunkSize;
  chunks_y_ = (height_ + kChunkSize - 1) / kChunkSize;
  chunk_lookup_.assign(static_cast<size_t>(chunks_x) * chunks_y_, -1);
  chunk_materials_.assign(chunk_lookup_.size(), {});
  for (int x = 0; x < width_; ++x) {
    for (int y = 0; y < height_; ++y) ++chunk_materials_[chunk_cell(x, y)][0];
  }
}

void World::set_material(Pos p, Material m) {
  Material& cell = materials_[index(p)];
  auto& counts = chunk_materials_[chunk_cell(p.x, p.y)];
  --counts[static_cast<int>(cell)];
  ++counts[static_cast<int>(m)];
  cell = m;
}

Chunk& World::chunk_for(Pos p) {
  const int cx = p.x / kChunkSize;
  const int cy = p.y / kChunkSize;
  int& index = chunk_lookup_[chunk_cell(p.x, p.y)];
  if (index < 0) {
    index = static_cast<int>(chunks_.size());
    Chunk chunk;
    chunk.xmin = cx * kChunkSize;
    chunk.xmax = std::min(chunk.xmin + kChunkSize, width_);
    chunk.ymin = cy * kChunkSize;
    chunk.ymax = std::min(chunk.ymin + kChunkSize, height_);
    chunks_.push_back(std::move(chunk));
  }
  return chunks_[index];
}

void World::insert_sorted(std::vector<int>& slots, int slot) {
  slots.insert(std::upper_bound(slots.begin(), slots.end(), slot), slot);
}

void World::erase(std::vector<int>& slots, int slot) {
  const auto it = std::lower_bound(slots.begin(), slots.end(), slot);
  if (it != slots.end() && *it == slot) slots.erase(it);
}

int World::add(const Object& object) {
  const int slot = static_cast<int>(objects_.size());
  objects_.push_back(object);
  object_map_[index(object.pos)] = slot;
  live_.push_back(slot);
  insert_sorted(chunk_for(object.pos).slots, slot);
  return slot;
}

void World::remove(int slot) {
  Object& obj = objects_[slot];
  if (obj.removed) return;
  object_map_[index(obj.pos)] = 0;
  erase(chunk_for(obj.pos).slots, slot);
  obj.removed = true;
  live_dirty_ = true;
}

void World::move(int slot, Pos target) {
  Object& obj = objects_[slot];
  if (obj.removed) return;
  object_map_[index(target)] = slot;
  object_map_[index(obj.pos)] = 0;
  const int old_cx = obj.pos.x / kChunkSize, old_cy = obj.pos.y / kChunkSize;
  if (old_cx != target.x / kChunkSize || old_cy != target.y / kChunkSize) {
    erase(chunk_for(obj.pos).slots, slot);
    insert_sorted(chunk_for(target).slots, slot);
  }
  obj.pos = target;
}

const std::vector<int>& World::live_slots() {
  if (live_dirty_) {
    std::erase_if(live_, [this](int slot) { return objects_[slot].removed; });
    live_dirty_ = false;
  }
  return live_;
}

uint8_t World::semantic_id_at(size_t index) const {
  const int slot = object_map_[index];
  return slot ? static_cast<uint8_t>(kNumMaterials + static_cast<int>(objects_[slot].kind)) : static_cast<uint8_t>(materials_[index]);
}

std::vector<uint8_t> World::semantic_map() const {
  std::vector<uint8_t> map(materials_.size());
  for (size_t i = 0; i < map.size(); ++i) map[i] = semantic_id_at(i);
  return map;
}

bool World::nearby_has(Pos p, int d, Material m) const {
  if (p.x - d < 0 || p.y - d < 0) return false;
  const int x_end = std::min(p.x + d + 1, width_);
  const int y_end = std::min(p.y + d + 1, height_);
  for (int x = p.x - d; x < x_end; ++x) {
    for (int y = p.y - d; y < y_end; ++y) {
      if (materials_[x * height_ + y] == m) return true;
    }
  }
  return false;
}

}  // namespace turnrl::envs::crafter
