// tandem info: the CPU and every GPU, CUDA versions.
#include <iostream>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "tandem/core/device.hpp"

namespace {

const bool registered = tandem::cli::register_command(
    {"info", "Describe the CPU (hwloc topology) and every CUDA device", [](CLI::App& app) -> std::function<int()> {
       auto json = std::make_shared<bool>(false);
       app.add_flag("--json", *json, "Print JSON instead of text");
       return [json] {
         const auto s = tandem::system_info();
         if (*json) std::cout << nlohmann::json(s).dump(2) << '\n';
         else std::cout << tandem::describe(s);
         return 0;
       };
     }});

const bool demo = tandem::cli::register_demo_part({0, "machine", [] {
                                                     std::cout << tandem::describe(tandem::system_info());
                                                     return true;
                                                   }});

}  // namespace
