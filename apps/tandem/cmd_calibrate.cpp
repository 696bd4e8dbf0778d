// tandem calibrate: measure transfer and memory bandwidths and store them for the cost models.
#include <iostream>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "options.hpp"
#include "tandem/core/calibrate.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/tune.hpp"

namespace {

struct Args {
  bool json{false};
  std::size_t mib{256};
  int reps{5};
  bool no_tune{false};
};

const bool registered = tandem::cli::register_command(
    {"calibrate", "Measure host, PCIe and device bandwidths and store them in the tuning cache",
     [](CLI::App& app) -> std::function<int()> {
       auto a = std::make_shared<Args>();
       app.add_flag("--json", a->json, "Print JSON instead of text");
       app.add_option("--mib", a->mib, "Buffer size in MiB")
           ->check(tandem::cli::in_range<std::size_t>(1, 1 << 16))
           ->capture_default_str();
       app.add_option("--repetitions", a->reps, "Timed runs per figure (median reported)")
           ->check(tandem::cli::in_range(1, 100))
           ->capture_default_str();
       app.add_flag("--no-tune", a->no_tune, "Keep the staging chunk size and threads instead of searching");
       return [a] {
         tandem::CalibrateOptions o;
         o.bytes = a->mib << 20;
         o.repetitions = a->reps;
         o.tune_staging = !a->no_tune;
         const auto b = tandem::calibrate(o);
         if (a->json) std::cout << nlohmann::json(b).dump(2) << '\n';
         else std::cout << tandem::describe(b) << "stored in " << tandem::TuningCache::global().path() << '\n';
         return 0;
       };
     }});

const bool demo = tandem::cli::register_demo_part({1, "calibrate", [] {
                                                     tandem::CalibrateOptions o;
                                                     o.bytes = std::size_t{128} << 20;
                                                     o.repetitions = 3;
                                                     o.tune_staging = false;
                                                     std::cout << tandem::describe(tandem::calibrate(o));
                                                     return true;
                                                   }});

}  // namespace
