"""Print the firmware's flash and RAM use against the Nano 33 BLE's limits (1 MB / 256 KB).

``python3 size_report.py hilbench_fw.elf`` (stdlib only; needs arm-none-eabi-size). Exits 1 when
either exceeds its limit. RAM counts static data, the reserved heap and the reserved stack.
"""

import subprocess
import sys

FLASH_LIMIT = 1024 * 1024
RAM_LIMIT = 256 * 1024
FLASH_SECTIONS = {".isr_vector", ".text", ".ARM.exidx", ".init_array", ".data"}
RAM_SECTIONS = {".data", ".bss", ".heap", ".stack"}


def sections(elf: str) -> dict:
    out = subprocess.run(
        ["arm-none-eabi-size", "-A", elf], capture_output=True, text=True, check=True
    ).stdout
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    return sizes


def main(elf: str) -> int:
    sizes = sections(elf)
    flash = sum(v for k, v in sizes.items() if k in FLASH_SECTIONS)
    ram = sum(v for k, v in sizes.items() if k in RAM_SECTIONS)
    detail = ", ".join(f"{k} {sizes.get(k, 0)}" for k in (".bss", ".heap", ".stack"))
    print(f"flash: {flash} B of {FLASH_LIMIT} B ({100 * flash / FLASH_LIMIT:.1f} %)")
    print(f"RAM:   {ram} B of {RAM_LIMIT} B ({100 * ram / RAM_LIMIT:.1f} %) [{detail}]")
    if flash > FLASH_LIMIT or ram > RAM_LIMIT:
        print("firmware does not fit the Nano 33 BLE", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
