"""Write the C++ unit tests' header from protocols/vectors/asc_int8/vector_*.json and
protocols/vectors/serial_frames.json (stdlib only).

Run by CMake at build time: ``python3 gen_vectors.py VECTOR_DIR OUT_HEADER``.
"""

import json
import sys
from pathlib import Path


def c_list(values):
    return ", ".join(str(int(v)) for v in values)


def main(vector_dir: str, out: str) -> None:
    paths = sorted(Path(vector_dir).glob("vector_*.json"))
    if not paths:
        raise SystemExit(f"no vector_*.json in {vector_dir}")
    lines = [
        "// GENERATED at build time by firmware/tools/gen_vectors.py; do not edit.",
        "#pragma once",
        "#include <stdint.h>",
        "",
    ]
    names = []
    for i, path in enumerate(paths):
        doc = json.loads(path.read_text("utf-8"))
        layers = {layer["layer"]: layer["data"] for layer in doc["layers"]}
        lines += [
            f"static const int8_t kVec{i}_input[] = {{{c_list(doc['input']['data'])}}};",
            f"static const int8_t kVec{i}_conv0[] = {{{c_list(layers['conv0'])}}};",
            f"static const int8_t kVec{i}_conv1[] = {{{c_list(layers['conv1'])}}};",
            f"static const int32_t kVec{i}_logits[] = {{{c_list(doc['logits']['data'])}}};",
        ]
        names.append((doc["name"], i, doc["class"]))
    lines += [
        "",
        "struct Vector { const char* name; const int8_t* input; const int8_t* conv0;",
        "  const int8_t* conv1; const int32_t* logits; int predicted; };",
        "static const Vector kVectors[] = {",
    ]
    lines += [
        f'  {{"{name}", kVec{i}_input, kVec{i}_conv0, kVec{i}_conv1, kVec{i}_logits, {cls}}},'
        for name, i, cls in names
    ]
    lines += ["};", f"static const int kNumVectors = {len(names)};", ""]
    frames = json.loads((Path(vector_dir).parent / "serial_frames.json").read_text("utf-8"))
    lines += [
        "struct SerialFrame { const char* name; uint8_t type; uint8_t seq;",
        "  const char* payload_hex; const char* encoded_hex; };",
        "static const SerialFrame kSerialFrames[] = {",
    ]
    lines += [
        f'  {{"{f["name"]}", {f["type"]}, {f["seq"]}, "{f["payload"]}", "{f["encoded"]}"}},'
        for f in frames["frames"]
    ]
    lines += ["};", f"static const int kNumSerialFrames = {len(frames['frames'])};", ""]
    Path(out).write_text("\n".join(lines), "utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
