// Block schedules: parsing, validation, whole orders and the candidate lists of the controller.
#include "tandem/schedule.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include <fmt/format.h>

#include "tandem/core/error.hpp"

namespace tandem::schedule {

namespace {

std::uint32_t parse_uint(const std::string& s, const std::string& what, const std::string& whole) {
  std::uint64_t v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(b, e, v);
  if (s.empty() || ec != std::errc() || ptr != e || v > 0xFFFFFFFFull)
    throw UsageError(fmt::format("schedule '{}': {} '{}' is not a non-negative integer", whole, what, s));
  return std::uint32_t(v);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::pair<std::uint32_t, std::uint32_t> parse_wxh(const std::string& s, const std::string& whole) {
  const auto parts = split(s, 'x');
  if (parts.size() != 2) throw UsageError(fmt::format("'{}': expected WxH (e.g. 8x4), got '{}'", whole, s));
  return {parse_uint(parts[0], "width", whole), parse_uint(parts[1], "height", whole)};
}

}  // namespace

std::string style_name(Style s) {
  switch (s) {
    case Style::sequential: return "sequential";
    case Style::strided: return "strided";
    case Style::zigzag: return "zigzag";
    case Style::tiled: return "tiled";
    case Style::hilbert: return "hilbert";
  }
  return "?";
}

Schedule parse_schedule(const std::string& text) {
  const auto parts = split(text, ':');
  const std::string& name = parts[0];
  auto want = [&](std::size_t n, const char* form) {
    if (parts.size() != n) throw UsageError(fmt::format("schedule '{}': expected {}", text, form));
  };
  if (name == "sequential") {
    want(1, "'sequential' without parameters");
    return Schedule::sequential();
  }
  if (name == "zigzag") {
    want(1, "'zigzag' without parameters");
    return Schedule::zigzag();
  }
  if (name == "hilbert") {
    want(1, "'hilbert' without parameters");
    return Schedule::hilbert();
  }
  if (name == "strided") {
    want(3, "strided:S:G (stride S, granularity G)");
    const auto s = parse_uint(parts[1], "stride", text), g = parse_uint(parts[2], "granularity", text);
    if (s < 1 || g < 1) throw UsageError(fmt::format("schedule '{}': stride and granularity must be >= 1", text));
    return Schedule::strided(s, g);
  }
  if (name == "tiled") {
    want(2, "tiled:WxH (tile width and height in blocks)");
    const auto [w, h] = parse_wxh(parts[1], text);
    if (w < 1 || h < 1) throw UsageError(fmt::format("schedule '{}': tile sides must be >= 1", text));
    return Schedule::tiled(w, h);
  }
  throw UsageError(fmt::format(
      "unknown schedule style '{}' (expected sequential, strided:S:G, zigzag, tiled:WxH or hilbert)", name));
}

std::string to_string(const Schedule& s) {
  switch (s.style) {
    case Style::strided: return fmt::format("strided:{}:{}", s.a, s.b);
    case Style::tiled: return fmt::format("tiled:{}x{}", s.a, s.b);
    default: return style_name(s.style);
  }
}

Grid parse_grid(const std::string& text) {
  const auto [w, h] = parse_wxh(text, text);
  if (w < 1 || h < 1) throw UsageError(fmt::format("grid '{}': width and height must be >= 1", text));
  if (std::uint64_t(w) * h > 0xFFFFFFFFull) throw UsageError(fmt::format("grid '{}' has more than 2^32 blocks", text));
  return {w, h};
}

void validate(const Schedule& s, Grid g) {
  if (g.w == 0 || g.h == 0) throw UsageError(fmt::format("empty grid {}x{}", g.w, g.h));
  if (g.count() > 0xFFFFFFFFull) throw UsageError(fmt::format("grid {}x{} has more than 2^32 blocks", g.w, g.h));
  const std::string name = to_string(s);
  switch (s.style) {
    case Style::strided: {
      if (s.a < 1 || s.b < 1) throw UsageError(fmt::format("{}: stride and granularity must be >= 1", name));
      if (s.b > g.count())
        throw UsageError(fmt::format("{}: granularity {} is larger than the grid's {} blocks", name, s.b, g.count()));
      const std::uint64_t groups = (g.count() + s.b - 1) / s.b;
      if (s.a > groups)
        throw UsageError(fmt::format("{}: stride {} is larger than the {} groups of {} blocks in a {}x{} grid", name,
                                     s.a, groups, s.b, g.w, g.h));
      break;
    }
    case Style::tiled:
      if (s.a < 1 || s.b < 1) throw UsageError(fmt::format("{}: tile sides must be >= 1", name));
      if (s.a > g.w || s.b > g.h)
        throw UsageError(fmt::format("{}: tile {}x{} does not fit the {}x{} grid", name, s.a, s.b, g.w, g.h));
      break;
    default: break;
  }
}

bool fits(const Schedule& s, Grid g) noexcept {
  try {
    validate(s, g);
    return true;
  } catch (...) {
    return false;
  }
}

std::vector<Block> order(const Schedule& s, Grid g) {
  validate(s, g);
  std::vector<Block> out(g.count());
  for (std::uint64_t p = 0; p < g.count(); ++p) out[p] = s.at(p, g);
  return out;
}

std::vector<std::uint32_t> ranks(const Schedule& s, Grid g) {
  validate(s, g);
  const std::uint32_t none = 0xFFFFFFFFu;
  std::vector<std::uint32_t> r(g.count(), none);
  for (std::uint64_t p = 0; p < g.count(); ++p) {
    const Block b = s.at(p, g);
    if (b.x >= g.w || b.y >= g.h)
      throw Error(
          fmt::format("{} on {}x{}: position {} maps outside the grid ({}, {})", to_string(s), g.w, g.h, p, b.x, b.y));
    auto& slot = r[std::uint64_t(b.y) * g.w + b.x];
    if (slot != none)
      throw Error(
          fmt::format("{} on {}x{}: block ({}, {}) at positions {} and {}", to_string(s), g.w, g.h, b.x, b.y, slot, p));
    slot = std::uint32_t(p);
  }
  return r;
}

std::string draw(const Schedule& s, Grid g) {
  if (g.count() > 65536)
    throw UsageError(fmt::format("grid {}x{} is too large to draw (at most 65536 blocks)", g.w, g.h));
  const auto r = ranks(s, g);
  const int width = int(std::to_string(g.count() - 1).size());
  std::ostringstream o;
  for (std::uint32_t y = 0; y < g.h; ++y) {
    for (std::uint32_t x = 0; x < g.w; ++x)
      o << (x ? " " : "") << fmt::format("{:>{}}", r[std::uint64_t(y) * g.w + x], width);
    o << '\n';
  }
  return o.str();
}

std::string order_json(const Schedule& s, Grid g) {
  const auto o = order(s, g);
  std::string out = "[";
  out.reserve(o.size() * 10 + 2);
  for (std::size_t i = 0; i < o.size(); ++i) out += fmt::format("{}[{}, {}]", i ? ", " : "", o[i].x, o[i].y);
  out += "]";
  return out;
}

std::vector<Schedule> candidates(Grid g, bool exhaustive, std::uint32_t max_tile) {
  std::vector<Schedule> c;
  auto add = [&](Schedule s) {
    if (fits(s, g) && std::find(c.begin(), c.end(), s) == c.end()) c.push_back(s);
  };
  add(Schedule::sequential());
  add(Schedule::zigzag());
  // Few candidates by default (the controller must profile cheaply): tiles in a geometric
  // progression of ratio 4; the exhaustive list has every power of two.
  for (std::uint32_t k = exhaustive ? 2 : 4; k <= max_tile; k *= exhaustive ? 2 : 4) add(Schedule::tiled(k, k));
  if (exhaustive) {
    for (std::uint32_t k = max_tile * 2; k <= 32; k *= 2) add(Schedule::tiled(k, k));
    for (std::uint32_t k = 2; k <= 16; k *= 4) {
      add(Schedule::tiled(2 * k, k));
      add(Schedule::tiled(k, 2 * k));
    }
    // CUTLASS's threadblock swizzle: strips K blocks wide over the whole height.
    for (std::uint32_t k : {4u, 8u}) add(Schedule::tiled(k, g.h));
  }
  add(Schedule::strided(g.w, 1));  // column-major
  if (exhaustive) {
    add(Schedule::strided(2, g.w));                    // even rows, then odd rows
    add(Schedule::strided(g.w / 8 ? g.w / 8 : 1, 8));  // groups of 8, W/8 apart: 8-wide column strips
  }
  add(Schedule::hilbert());
  return c;
}

Schedule rescale(const Schedule& s, Grid from, Grid to) {
  if (from == to) return s;
  Schedule r = s;
  if (s.style == Style::strided) {
    if (s.a == from.w && s.b == 1) r.a = to.w;
    else if (s.b == from.w) r.b = to.w;
    else if (s.b == 8 && s.a == std::max(1u, from.w / 8)) r.a = std::max(1u, to.w / 8);
  } else if (s.style == Style::tiled) {
    r.a = s.a == from.w ? to.w : std::min(s.a, to.w);
    r.b = s.b == from.h ? to.h : std::min(s.b, to.h);
    if (r.a == 0) r.a = 1;
    if (r.b == 0) r.b = 1;
  }
  return r;
}

std::vector<Schedule> refinements(const Schedule& best, Grid g) {
  std::vector<Schedule> c;
  auto add = [&](Schedule s) {
    if (!(s == best) && fits(s, g) && std::find(c.begin(), c.end(), s) == c.end()) c.push_back(s);
  };
  if (best.style == Style::tiled) {
    add(Schedule::tiled(best.a * 2, best.b));
    add(Schedule::tiled(best.a, best.b * 2));
    if (best.a > 1) add(Schedule::tiled(best.a / 2, best.b));
    if (best.b > 1) add(Schedule::tiled(best.a, best.b / 2));
  } else if (best.style == Style::strided) {
    add(Schedule::strided(best.a, best.b * 2));
    if (best.b > 1) add(Schedule::strided(best.a, best.b / 2));
  }
  return c;
}

}  // namespace tandem::schedule
