#!/usr/bin/env bash
# A consumer project finds the installed library with find_package(tandem), includes the
# umbrella header from the installed tree and links it.
set -eu
build=$(cd "$(dirname "$1")" && pwd)
if grep -q '^TANDEM_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "sanitized build: consumer would need the sanitizer runtime; skipped"; exit 0
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
mkdir "$work/consumer"
cat >"$work/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(consumer CXX)
find_package(tandem REQUIRED)
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE tandem::tandem)
CMAKE
cat >"$work/consumer/main.cpp" <<'CPP'
#include <cstdio>
#include <vector>
#include <tandem/tandem.hpp>
int main() {
  std::vector<int> v{3, -1, 2};
  tandem::sort(std::span<int>(v));
  std::printf("%d %d %d\n", v[0], v[1], v[2]);
}
CPP
cmake -S "$work/consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
cmake --build "$work/build" >>"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
out=$("$work/build/consumer")
[ "$out" = "-1 2 3" ] || { echo "consumer printed '$out'"; exit 1; }
echo "ok   find_package(tandem) consumer"
