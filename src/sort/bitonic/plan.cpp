// The hybrid bitonic plan: allocation, independence, short runs, cost model.
#include "tandem/sort/bitonic_plan.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sort/bitonic/plan_edits.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"

namespace tandem::bitonic {

NetStep net_step(int step) {
  if (step < 1) throw UsageError(fmt::format("bitonic step numbers start at 1 (got {})", step));
  int p = 1;
  while (p * (p + 1) / 2 < step) ++p;
  const int j = step - (p - 1) * p / 2;  // 1..p inside the subset
  return {step, p, std::uint64_t{1} << (p - j)};
}

int ceil_log2(std::uint64_t n) { return n <= 1 ? 0 : int(std::bit_width(n - 1)); }

std::uint64_t Plan::share(const std::string& name) const {
  for (const auto& d : devices)
    if (d.name == name) return d.count;
  return 0;
}

std::string Plan::mode_name(int mode) const {
  if (mode == kConcurrent) return "concurrent";
  return mode >= 0 && mode < int(devices.size()) ? devices[mode].name : "?";
}

std::vector<PlanRun> Plan::runs() const {
  std::vector<PlanRun> r;
  for (const auto& s : steps) {
    if (!r.empty() && r.back().mode == s.mode && r.back().last + 1 == s.step) r.back().last = s.step;
    else r.push_back({s.step, s.step, s.mode});
  }
  return r;
}

int Plan::concurrent_steps() const {
  return int(std::count_if(steps.begin(), steps.end(), [](const PlanStep& s) { return s.mode == kConcurrent; }));
}

std::string Plan::concurrent_ranges() const {
  std::string out;
  for (const auto& r : runs()) {
    if (r.mode != kConcurrent) continue;
    if (!out.empty()) out += ", ";
    out += r.first == r.last ? fmt::format("{}", r.first) : fmt::format("{}-{}", r.first, r.last);
  }
  return out.empty() ? "none" : out;
}

namespace {

void check_policy(char policy) {
  if (policy != 'a' && policy != 'b' && policy != 'c')
    throw UsageError(fmt::format("unknown allocation policy '{}' (expected a, b or c)", policy));
}

void check_n(std::uint64_t n) {
  if (n > (std::uint64_t{1} << 62)) throw UsageError(fmt::format("bitonic plan: {} elements is too many", n));
}

// N with 1/2^(N+1) <= f < 1/2^N, at least 1; large when f is tiny.
int n_for_fraction(double f) {
  int N = 1;
  while (N < 64 && f < std::ldexp(1.0, -(N + 1))) ++N;
  return N;
}

// Elements the weaker device gets under `policy` for fraction f of the work, on P = 2^log2n.
std::uint64_t policy_share(char policy, double f, int N, int log2n) {
  const std::uint64_t P = std::uint64_t{1} << log2n;
  switch (policy) {
    case 'a': {  // floor, forgiving the rounding of k/(1+k) (0.6/1.6 * 16 must give 6)
      const double x = f * double(P);
      return std::min<std::uint64_t>(P, static_cast<std::uint64_t>(std::floor(x + 1e-9 * std::max(1.0, x))));
    }
    case 'b': return N + 1 > log2n ? 0 : P >> (N + 1);
    default: return N > log2n ? 0 : P >> N;
  }
}

double move_seconds(const CostModel& c, int from, int to, std::uint64_t elements) {
  if (from == to || elements == 0) return 0;
  const double bytes = double(elements) * double(c.element_bytes);
  double bw = 0;
  const auto gpu = [&](int d) { return d < int(c.gpu_of.size()) ? c.gpu_of[d] : d; };
  if (from == c.host_device) bw = c.h2d_bytes_per_s;
  else if (to == c.host_device) bw = c.d2h_bytes_per_s;
  else if (gpu(from) == gpu(to) && c.same_gpu_bytes_per_s > 0) bw = c.same_gpu_bytes_per_s;
  else if (c.peer_bytes_per_s > 0) bw = c.peer_bytes_per_s;
  else bw = std::min(c.h2d_bytes_per_s, c.d2h_bytes_per_s);  // GPU to GPU through the host: about one link
  return bw > 0 ? bytes / bw : 0;
}

// Seconds to go from data location `from` to `to` (kConcurrent: every device holds its share).
double transition_seconds(const Plan& p, const CostModel& c, int from, int to) {
  if (from == to) return 0;
  double t = 0;
  const int nd = int(p.devices.size());
  if (to == kConcurrent) {  // scatter: each device fetches its share from `from`
    for (int d = 0; d < nd; ++d) t += move_seconds(c, from, d, p.devices[d].count);
  } else if (from == kConcurrent) {  // gather onto `to`
    for (int d = 0; d < nd; ++d) t += move_seconds(c, d, to, p.devices[d].count);
  } else {
    t = move_seconds(c, from, to, p.padded());
  }
  return t;
}

double step_cost(const CostModel& c, int device, std::uint64_t elements, bool alone = false) {
  if (alone && device >= 0 && device < int(c.alone_step_seconds.size()))
    return c.alone_step_seconds[device] * double(elements);
  if (device < 0 || device >= int(c.step_seconds.size())) return 0;
  return c.step_seconds[device] * double(elements);
}

void validate_cost(const Plan& p, const CostModel& c) {
  if (c.step_seconds.size() != p.devices.size())
    throw UsageError(fmt::format("cost model has {} device step times for a plan of {} devices", c.step_seconds.size(),
                                 p.devices.size()));
}

int active_devices(const Plan& p) {
  return int(std::count_if(p.devices.begin(), p.devices.end(), [](const DeviceShare& d) { return d.count > 0; }));
}

// Marks independence and modes from the shares.
void mark_steps(Plan& p) {
  const std::uint64_t P = p.padded();
  std::vector<std::uint64_t> boundaries;
  int only = -1;
  for (int d = 0; d < int(p.devices.size()); ++d) {
    const auto& s = p.devices[d];
    if (s.count == 0) continue;
    only = d;
    if (s.offset > 0 && s.offset < P) boundaries.push_back(s.offset);
    if (s.offset + s.count < P) boundaries.push_back(s.offset + s.count);
  }
  const bool split = active_devices(p) > 1;
  p.steps.clear();
  for (int t = 1; t <= step_count(p.log2n); ++t) {
    const NetStep ns = net_step(t);
    PlanStep s{t, ns.subset, ns.stride, true, kConcurrent};
    for (auto b : boundaries)
      if (b % (2 * ns.stride) != 0) s.independent = false;
    if (!split) s.mode = only >= 0 ? only : p.gather;
    else s.mode = s.independent ? kConcurrent : p.gather;
    p.steps.push_back(s);
  }
}

}  // namespace

void apply_min_interior_run(Plan& p, int min_interior_run) {
  p.min_interior_run = min_interior_run;
  if (min_interior_run <= 0) return;
  const int total = step_count(p.log2n);
  for (const auto& r : p.runs()) {
    if (r.mode != kConcurrent) continue;
    const bool interior = r.first > 1 && r.last < total;
    if (interior && r.length() < min_interior_run)
      for (int t = r.first; t <= r.last; ++t) p.steps[t - 1].mode = p.gather;
  }
  p.decided_by = "min_interior_run";
}

Plan make_plan(std::uint64_t n, double k, char policy, int min_interior_run) {
  check_policy(policy);
  check_n(n);
  if (std::isnan(k)) throw UsageError("bitonic plan: k is NaN");
  Plan p;
  p.n = n;
  p.log2n = ceil_log2(n);
  p.k = k;
  p.policy = policy;
  const std::uint64_t P = p.padded();
  std::uint64_t cpu = 0;
  if (k <= 0) {
    p.gather = 1;
    p.notes.push_back("k <= 0: everything on the GPU");
  } else if (std::isinf(k)) {
    p.gather = 0;
    cpu = P;
    p.notes.push_back("k = inf: everything on the CPU");
  } else {
    const double r = std::min(k, 1.0 / k);
    const double f = r / (1.0 + r);
    p.N = n_for_fraction(f);
    const std::uint64_t weak = policy_share(policy, f, p.N, p.log2n);
    const bool cpu_weaker = k <= 1.0;
    p.gather = cpu_weaker ? 1 : 0;
    cpu = cpu_weaker ? weak : P - weak;
  }
  p.devices = {{"cpu", k <= 0 ? 0.0 : k, 0, cpu}, {"gpu", 1.0, cpu, P - cpu}};
  mark_steps(p);
  if (min_interior_run >= 0) apply_min_interior_run(p, min_interior_run);
  return p;
}

Plan make_plan(std::uint64_t n, double k, char policy, int min_interior_run, const CostModel& cost) {
  Plan p = make_plan(n, k, policy, -1);
  if (min_interior_run >= 0) apply_min_interior_run(p, min_interior_run);
  else optimise(p, cost);
  return p;
}

Plan make_multi_plan(std::uint64_t n, const std::vector<DeviceShare>& devices, char policy, int min_interior_run) {
  check_policy(policy);
  check_n(n);
  if (devices.empty()) throw UsageError("bitonic plan: no devices");
  double total = 0;
  for (const auto& d : devices) {
    if (!(d.capability >= 0) || std::isinf(d.capability))
      throw UsageError(fmt::format("bitonic plan: device '{}' has capability {}", d.name, d.capability));
    total += d.capability;
  }
  if (total <= 0) throw UsageError("bitonic plan: every device has capability 0");
  Plan p;
  p.n = n;
  p.log2n = ceil_log2(n);
  p.policy = policy;
  p.devices = devices;
  const std::uint64_t P = p.padded();
  const int nd = int(devices.size());
  p.gather =
      int(std::max_element(devices.begin(), devices.end(),
                           [](const DeviceShare& a, const DeviceShare& b) { return a.capability < b.capability; }) -
          devices.begin());
  std::uint64_t sum = 0;
  for (int d = 0; d < nd; ++d) {
    auto& s = p.devices[d];
    s.count = 0;
    if (d == p.gather || s.capability <= 0) continue;
    const double f = s.capability / total;
    s.count = policy_share(policy, f, n_for_fraction(f), p.log2n);
    sum += s.count;
  }
  while (sum > P) {  // rounding up overshot: halve the largest share until it fits
    auto it = std::max_element(p.devices.begin(), p.devices.end(),
                               [&](const DeviceShare& a, const DeviceShare& b) { return a.count < b.count; });
    sum -= it->count - it->count / 2;
    it->count /= 2;
  }
  p.devices[p.gather].count = P - sum;
  // Layout: the weaker devices, larger shares first, then the gathering device.
  std::vector<int> order;
  for (int d = 0; d < nd; ++d)
    if (d != p.gather) order.push_back(d);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p.devices[a].count > p.devices[b].count; });
  order.push_back(p.gather);
  std::uint64_t off = 0;
  for (int d : order) {
    p.devices[d].offset = off;
    off += p.devices[d].count;
  }
  if (nd == 2 && p.devices[p.gather].capability > 0) {
    const int weak = 1 - p.gather;
    p.k = p.devices[weak].capability / p.devices[p.gather].capability;
    const double r = p.k;
    p.N = r > 0 ? n_for_fraction(r / (1 + r)) : 0;
  }
  mark_steps(p);
  if (min_interior_run >= 0) apply_min_interior_run(p, min_interior_run);
  return p;
}

PlanCost predict(const Plan& p, const CostModel& c) {
  validate_cost(p, c);
  PlanCost out;
  const int start = c.data_on_host && c.host_device >= 0 ? c.host_device : p.gather;
  int where = start;
  const auto runs = p.runs();
  for (const auto& r : runs) {
    const double move = transition_seconds(p, c, where, r.mode);
    double comp = 0;
    if (r.mode == kConcurrent) {
      double slowest = 0;
      for (int d = 0; d < int(p.devices.size()); ++d) slowest = std::max(slowest, step_cost(c, d, p.devices[d].count));
      comp = slowest * r.length();
    } else {
      comp = step_cost(c, r.mode, p.padded(), true) * r.length();
    }
    out.run_seconds.push_back(move + comp);
    out.transfer += move;
    out.compute += comp;
    where = r.mode;
  }
  const double back = transition_seconds(p, c, where, start);
  if (!out.run_seconds.empty()) out.run_seconds.back() += back;
  out.transfer += back;
  out.total = out.compute + out.transfer;
  return out;
}

void optimise(Plan& p, const CostModel& c, bool allow_single_device) {
  validate_cost(p, c);
  p.decided_by = "cost model";
  if (p.steps.empty()) return;
  // 1. Gather vs concurrent, run by run, keeping the cheaper total.
  if (active_devices(p) > 1) {
    for (const auto& r : p.runs()) {
      if (r.mode != kConcurrent) continue;
      const double conc = predict(p, c).total;
      for (int t = r.first; t <= r.last; ++t) p.steps[t - 1].mode = p.gather;
      const double gath = predict(p, c).total;
      if (conc < gath)
        for (int t = r.first; t <= r.last; ++t) p.steps[t - 1].mode = kConcurrent;
      else
        p.notes.push_back(fmt::format("steps {}-{} gathered: {} concurrent vs {} on {} (transfers)", r.first, r.last,
                                      human_seconds(conc), human_seconds(gath), p.mode_name(p.gather)));
    }
  }
  // 2. Does co-execution pay at all? Compare with each device alone.
  const double hybrid = predict(p, c).total;
  if (!allow_single_device) return;
  int best = -1;
  double best_t = hybrid;
  for (int d = 0; d < int(p.devices.size()); ++d) {
    Plan single = p;
    for (auto& s : single.devices) s.count = 0;
    single.devices[d].offset = 0;
    single.devices[d].count = p.padded();
    single.gather = d;
    mark_steps(single);
    const double t = predict(single, c).total;
    if (t <= best_t) {  // a tie goes to the simpler single-device plan
      best_t = t;
      best = d;
    }
  }
  if (best >= 0) {
    p.notes.push_back(fmt::format("co-execution does not pay: predicted {} split vs {} on {} alone",
                                  human_seconds(hybrid), human_seconds(best_t), p.devices[best].name));
    for (auto& s : p.devices) {
      s.count = 0;
      s.offset = 0;
    }
    p.devices[best].count = p.padded();
    p.gather = best;
    mark_steps(p);
  } else if (active_devices(p) > 1) {
    p.notes.push_back(fmt::format("co-execution pays: predicted {}", human_seconds(hybrid)));
  }
}

nlohmann::json to_json(const Plan& p) {
  nlohmann::json j;
  std::uint64_t gpu = 0;
  for (const auto& d : p.devices)
    if (d.name.rfind("gpu", 0) == 0) gpu += d.count;
  j["n"] = p.n;
  j["log2_n"] = p.log2n;
  j["padded"] = p.padded();
  j["k"] = p.k;
  j["N"] = p.N;
  j["policy"] = std::string(1, p.policy);
  j["cpu_elements"] = p.share("cpu");
  j["gpu_elements"] = gpu;
  j["min_interior_run"] = p.min_interior_run;
  j["gather"] = p.mode_name(p.gather);
  j["decided_by"] = p.decided_by;
  j["concurrent"] = p.concurrent_ranges();
  j["devices"] = nlohmann::json::array();
  for (const auto& d : p.devices)
    j["devices"].push_back({{"name", d.name}, {"capability", d.capability}, {"offset", d.offset}, {"count", d.count}});
  j["steps"] = nlohmann::json::array();
  for (const auto& s : p.steps)
    j["steps"].push_back({{"step", s.step}, {"subset", s.subset}, {"stride", s.stride}, {"mode", p.mode_name(s.mode)}});
  j["notes"] = p.notes;
  return j;
}

std::string describe(const Plan& p) {
  std::string out = fmt::format("bitonic plan: n={} (2^{} with padding), k={:.4g}, N={}, policy {}, decided by {}\n",
                                p.n, p.log2n, p.k, p.N, p.policy, p.decided_by);
  for (const auto& d : p.devices)
    out += fmt::format("  {:<6} elements [{}, {}) ({})\n", d.name, d.offset, d.offset + d.count, d.count);
  out += fmt::format("  concurrent steps: {}; dependent steps on {}\n", p.concurrent_ranges(), p.mode_name(p.gather));
  if (p.steps.size() <= 64) {
    out += "  step subset stride  mode\n";
    for (const auto& s : p.steps)
      out += fmt::format("  {:>4} {:>6} {:>6}  {}\n", s.step, s.subset, s.stride, p.mode_name(s.mode));
  } else {
    for (const auto& r : p.runs()) out += fmt::format("  steps {:>4}-{:<4} {}\n", r.first, r.last, p.mode_name(r.mode));
  }
  for (const auto& n : p.notes) out += "  note: " + n + "\n";
  return out;
}

}  // namespace tandem::bitonic
