// tandem demo: every capability on generated data, in about a minute, on whatever machine this is.
#include <iostream>

#include <fmt/format.h>

#include "command.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/timing.hpp"

namespace {

const bool registered = tandem::cli::register_command(
    {"demo", "Run every capability on generated data and check the results", [](CLI::App& app) -> std::function<int()> {
       auto only = std::make_shared<std::string>();
       app.add_option("--only", *only, "Run only the part with this name");
       return [only] {
         int failed = 0, ran = 0;
         tandem::Stopwatch total;
         for (const auto& part : tandem::cli::demo_parts()) {
           if (!only->empty() && part.name != *only) continue;
           std::cout << fmt::format("\n== {} ==\n", part.name) << std::flush;
           tandem::Stopwatch w;
           bool ok = false;
           try {
             ok = part.run();
           } catch (const std::exception& e) {
             std::cout << "error: " << e.what() << '\n';
           }
           ++ran;
           failed += !ok;
           std::cout << fmt::format("-- {} {} in {}\n", part.name, ok ? "ok" : "FAILED",
                                    tandem::human_seconds(w.seconds()));
         }
         if (ran == 0) {
           std::cerr << "tandem: error: no demo part named '" << *only << "'\n";
           return 2;
         }
         std::cout << fmt::format("\ndemo: {} part(s), {} failed, {}\n", ran, failed,
                                  tandem::human_seconds(total.seconds()));
         return failed ? 1 : 0;
       };
     }});

}  // namespace
