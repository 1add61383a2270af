#include "envs/babyai/instructions.h"

#include <algorithm>

namespace turnrl::envs::babyai {

void ObjectDesc::find_matching(const World& world) {
  objects.clear();
  positions.clear();
  for (int x = 0; x < world.grid.width(); ++x) {
    for (int y = 0; y < world.grid.height(); ++y) {
      const int16_t cell = world.grid.at({x, y});
      if (cell < 0) continue;
      const WorldObject& obj = world.objects[cell];
      if (obj.type != type || (color && obj.color != *color)) continue;
      objects.push_back(cell);
      positions.push_back({x, y});
    }
  }
}

void ObjectDesc::refresh_positions(const World& world) {
  positions.clear();
  for (int x = 0; x < world.grid.width(); ++x) {
    for (int y = 0; y < world.grid.height(); ++y) {
      const int16_t cell = world.grid.at({x, y});
      if (cell >= 0 && std::find(objects.begin(), objects.end(), cell) != objects.end()) positions.push_back({x, y});
    }
  }
}

std::string ObjectDesc::surface(const World& world) {
  find_matching(world);
  std::string text(type_name(type));
  if (color) text = std::string(color_name(*color)) + " " + text;
  return (objects.size() > 1 ? "a " : "the ") + text;
}

void ObjectDesc::append_state(StateWriter& out) const {
  out.put(type);
  out.put(color.has_value());
  out.put(color.value_or(Color::kRed));
  out.put(objects.size());
  for (int16_t obj : objects) out.put(obj);
  out.put(positions.size());
  for (Pos p : positions) {
    out.put(p.x);
    out.put(p.y);
  }
}

std::unique_ptr<Instruction> Instruction::go_to(ObjectDesc desc) {
  std::unique_ptr<Instruction> instr(new Instruction(Kind::kGoTo));
  instr->desc_ = std::move(desc);
  return instr;
}

std::unique_ptr<Instruction> Instruction::pickup(ObjectDesc desc) {
  std::unique_ptr<Instruction> instr(new Instruction(Kind::kPickup));
  instr->desc_ = std::move(desc);
  return instr;
}

std::unique_ptr<Instruction> Instruction::open(ObjectDesc desc) {
  std::unique_ptr<Instruction> instr(new Instruction(Kind::kOpen));
  instr->desc_ = std::move(desc);
  return instr;
}

std::unique_ptr<Instruction> Instruction::put_next(ObjectDesc move, ObjectDesc fixed) {
  std::unique_ptr<Instruction> instr(new Instruction(Kind::kPutNext));
  instr->desc_ = std::move(move);
  instr->desc_fixed_ = std::move(fixed);
  return instr;
}

std::unique_ptr<Instruction> Instruction::before(std::unique_ptr<Instruction> a, std::unique_ptr<Instruction> b) {
  std::unique_ptr<Instruction> instr(new Instruction(Kind::kBefore));
  instr->first_ = std::move(a);
  instr->second_ = std::move(b);
  return instr;
}

std::unique_ptr<Instruction> Instruction::after(std::unique_ptr<Instruction> a, std::unique_ptr<Instruction> b) {
  std::unique_ptr<Instruction> instr(new Instruction(Kind::kAfter));
  instr->first_ = std::move(a);
  instr->second_ = std::move(b);
  return instr;
}

std::string Instruction::surface(const World& world) {
  switch (kind_) {
    case Kind::kGoTo:
      return "go to " + desc_.surface(world);
    case Kind::kPickup:
      return "pick up " + desc_.surface(world);
    case Kind::kOpen:
      return "open " + desc_.surface(world);
    case Kind::kPutNext: {
      std::string move = desc_.surface(world);
      return "put " + move + " next to " + desc_fixed_.surface(world);
    }
    case Kind::kBefore: {
      std::string a = first_->surface(world);
      return a + ", then " + second_->surface(world);
    }
    case Kind::kAfter: {
      std::string a = first_->surface(world);
      return a + " after you " + second_->surface(world);
    }
  }
  return {};
}

void Instruction::reset_verifier(const World& world) {
  pre_carrying_ = Grid::kEmpty;
  first_done_ = second_done_ = false;
  if (first_) {
    first_->reset_verifier(world);
    second_->reset_verifier(world);
    return;
  }
  desc_.find_matching(world);
  if (kind_ == Kind::kPutNext) desc_fixed_.find_matching(world);
}

void Instruction::refresh_positions(const World& world) {
  if (first_) {
    first_->refresh_positions(world);
    second_->refresh_positions(world);
    return;
  }
  desc_.refresh_positions(world);
  if (kind_ == Kind::kPutNext) desc_fixed_.refresh_positions(world);
}

int Instruction::num_navs() const {
  if (first_) return first_->num_navs() + second_->num_navs();
  return kind_ == Kind::kPutNext ? 2 : 1;
}

bool Instruction::objects_next(const World& world) const {
  for (int16_t moved : desc_.objects) {
    for (Pos fixed : desc_fixed_.positions) {
      if (next_to(world.objects[moved].cur_pos, fixed)) return true;
    }
  }
  return false;
}

void Instruction::append_state(StateWriter& out) const {
  out.put(kind_);
  out.put(pre_carrying_);
  out.put(first_done_);
  out.put(second_done_);
  desc_.append_state(out);
  desc_fixed_.append_state(out);
  if (first_) {
    first_->append_state(out);
    second_->append_state(out);
  }
}

Status Instruction::verify_leaf(const World& world, int action) {
  switch (kind_) {
    case Kind::kGoTo: {
      const Pos front = world.front_pos();
      for (Pos p : desc_.positions) {
        if (p == front) return Status::kSuccess;
      }
      return Status::kContinue;
    }
    case Kind::kPickup: {
      const int16_t before = pre_carrying_;
      pre_carrying_ = world.carrying;
      if (action != kPickup) return Status::kContinue;
      for (int16_t obj : desc_.objects) {
        if (before == Grid::kEmpty && world.carrying == obj) return Status::kSuccess;
      }
      return Status::kContinue;
    }
    case Kind::kOpen: {
      if (action != kToggle) return Status::kContinue;
      const int16_t front = world.grid.at(world.front_pos());
      for (int16_t door : desc_.objects) {
        if (front == door && world.objects[door].is_open) return Status::kSuccess;
      }
      return Status::kContinue;
    }
    case Kind::kPutNext: {
      const int16_t before = pre_carrying_;
      pre_carrying_ = world.carrying;
      if (action != kDrop) return Status::kContinue;
      for (int16_t moved : desc_.objects) {
        if (before != moved) continue;
        for (Pos fixed : desc_fixed_.positions) {
          if (next_to(world.objects[moved].cur_pos, fixed)) return Status::kSuccess;
        }
      }
      return Status::kContinue;
    }
    default:
      return Status::kContinue;
  }
}

const Instruction& Instruction::pending() const {
  if (!first_) return *this;
  // As verify() does them: Before `first_` then `second_`, After the reverse.
  const Instruction& early = kind_ == Kind::kBefore ? *first_ : *second_;
  const Instruction& late = kind_ == Kind::kBefore ? *second_ : *first_;
  return ((kind_ == Kind::kBefore ? first_done_ : second_done_) ? late : early).pending();
}

Status Instruction::verify(const World& world, int action) {
  if (!first_) return verify_leaf(world, action);
  // Before verifies `first_` then `second_`; After the reverse. Once the earlier part succeeds,
  // the later part is verified in the same step.
  Instruction& early = kind_ == Kind::kBefore ? *first_ : *second_;
  Instruction& late = kind_ == Kind::kBefore ? *second_ : *first_;
  bool& early_done = kind_ == Kind::kBefore ? first_done_ : second_done_;
  if (!early_done) {
    const Status status = early.verify(world, action);
    if (status != Status::kSuccess) return status;
    early_done = true;
  }
  return late.verify(world, action);
}

}  // namespace turnrl::envs::babyai
