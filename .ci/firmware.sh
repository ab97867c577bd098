#!/usr/bin/env bash
# Firmware: the C++ core for the host (pty program + unit tests) and for the Nano 33 BLE's
# Cortex-M4F (size report against 1 MB flash / 256 KB RAM), and the generated model header's
# freshness. Needs root for apt-get on a fresh machine; installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v arm-none-eabi-gcc >/dev/null || need+=(gcc-arm-none-eabi)
[ -d /usr/lib/arm-none-eabi/newlib ] || need+=(libnewlib-arm-none-eabi)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi
echo "== firmware: model headers are generated from the packaged model and the vectors' model"
.venv/bin/python -m hilbench_drivers.arduino.model_header --check
echo "== firmware: host build + C++ unit tests"
cmake -S firmware -B firmware/build/host -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build firmware/build/host -j 2
ctest --test-dir firmware/build/host --output-on-failure
firmware/build/host/test_core | tail -n 1
echo "== firmware: Cortex-M4F build (arm-none-eabi), flash and RAM against the Nano 33 BLE"
cmake -S firmware -B firmware/build/arm -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE=cmake/arm-none-eabi.cmake >/dev/null
cmake --build firmware/build/arm -j 2
