#!/usr/bin/env python3
"""mutable_statics.py: no mutable static anywhere in core/, web/ or main/ (docs/ARCHITECTURE.md).

Reads the object files of a build with nm: a variable with static storage duration that the
program can write lives in .data or .bss (nm types d/D/b/B). Constants the compiler folds are
not there at all; constants initialised at run time (a `static const std::vector` in a function)
are, so a symbol there passes only when its name says it is a constant (kName, as STYLE.md
names constants) and its declaration in the sources says `const` or `constexpr`.

usage: mutable_statics.py BUILD_DIR SOURCE_DIR...   (exit 1 and one line per offender)
"""
import pathlib
import re
import subprocess
import sys

build, sources = pathlib.Path(sys.argv[1]), [pathlib.Path(p) for p in sys.argv[2:]]
# Every target of the build is ours but Dear ImGui's (third party) and the tests' and benchmarks'
# programs (tests/, bench/: not under the rule); the app's and the hub's included.
def rule_applies(target):
    return target != "imgui" and not target.startswith(("attn_test", "attn_bench", "fuzz_"))
# Each folder's targets are under its own CMakeFiles/ (build/core/CMakeFiles/attn_model.dir/…).
def target_of(path):
    return path.parts[len(path.parts) - 1 - path.parts[::-1].index("CMakeFiles") + 1].removesuffix(".dir")
targets = sorted({target_of(d) for d in build.glob("**/CMakeFiles/*.dir") if rule_applies(target_of(d))})
objects = [o for o in build.glob("**/CMakeFiles/*.dir/**/*.o") if target_of(o) in targets]
if not objects:
    sys.exit(f"mutable_statics: no object files of ours under {build}")
scanned = sorted({target_of(o) for o in objects})

text = "\n".join(p.read_text(errors="replace") for d in sources for p in d.rglob("*")
                 if p.suffix in (".cpp", ".hpp", ".inc"))
offenders = set()
for obj in objects:
    out = subprocess.run(["nm", "-C", str(obj)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) != 3 or parts[1] not in "dDbB":
            continue
        name = parts[2]
        if name.startswith(("guard variable", "std::__ioinit", "typeinfo", "vtable")):
            continue
        if name.startswith(("stbiw__", "stbi_")):  # stb_image_write, compiled into png.cpp: not ours
            continue
        last = re.sub(r"\[abi:[^\]]*\]", "", name).split("::")[-1]
        declared_const = re.search(r"\b(const|constexpr)\b[^;(){}]*\b" + re.escape(last) + r"\b", text)
        if re.fullmatch(r"k[A-Z]\w*", last) and declared_const:
            continue
        offenders.add(f"{obj.relative_to(build)}: {name}")
for o in sorted(offenders):
    print("mutable static:", o)
print(f"mutable_statics: {len(objects)} object files of {len(scanned)} targets ({', '.join(scanned)}), {len(offenders)} mutable statics")
sys.exit(1 if offenders else 0)
