# Third-party libraries, all from Debian/Ubuntu packages (scripts/setup installs them).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)
# Compressed CSV input for the streaming scan (src/scan/): optional, each where it is found.
find_package(ZLIB QUIET)
pkg_check_modules(ZSTD QUIET IMPORTED_TARGET libzstd)
