#!/usr/bin/env python3
"""wasm_relaxed.py: give a wasm module built by Debian's Emscripten 3.1.6 the final relaxed-SIMD
opcode of its fused multiply-add, in place.

    python3 scripts/wasm_relaxed.py FILE.wasm

Why (docs/ARCHITECTURE.md, "Two wasm modules"): Emscripten 3.1.6's clang 14 writes
`__builtin_wasm_fma_f32x4` as the relaxed-SIMD proposal's prototype opcode, 0xfd 0xaf, and its
binaryen 108 (wasm-emscripten-finalize, wasm-opt) reads that opcode. The proposal's final
numbering, which browsers run (Chrome ≥ 114, Firefox ≥ 146), calls the instruction
f32x4.relaxed_madd, 0xfd 0x105; binaryen 108 cannot read that, and clang 19, which writes it,
then fails in finalize. So the module is built and optimised with the prototype opcode and
renumbered here, after the last tool that reads it. Both mean a·b + c on the operands (a, b, c)
in stack order: the kernel tests check the sums in the renumbered module.

The code section is decoded instruction by instruction (every immediate skipped by its encoding),
so only opcodes are rewritten, never bytes of constants or offsets. Both opcodes' LEB128 forms
are two bytes (0xaf 0x01, 0x85 0x02): the rewrite keeps every size and offset. Any other
prototype relaxed-SIMD opcode stops the script (nothing maps it yet), and a module without any
fma is an error too: the relaxed build would then be the plain one under another name.
"""
import sys

PROTO_FMA = 0xAF           # f32x4.relaxed_fma in LLVM 14 and binaryen 108
FINAL_MADD = 0x105         # f32x4.relaxed_madd (relaxed-simd, phase 4)
# The other prototype relaxed opcodes of LLVM 14 (swizzle, truncations, fms, lane selects,
# min/max). They lie in slots SIMD128 leaves unassigned, so a leftover one would not validate;
# the script names them first.
PROTO_OTHER = {0xA2, 0xA5, 0xA6, 0xB0, 0xB2, 0xB3, 0xB4, 0xC5, 0xC6, 0xCF, 0xD0, 0xD2, 0xD3, 0xD4,
               0xE2, 0xEE}
VALTYPES = {0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F}


class Reader:
    def __init__(self, data, pos):
        self.data, self.pos = data, pos

    def byte(self):
        b = self.data[self.pos]
        self.pos += 1
        return b

    def uleb(self):
        result, shift = 0, 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return result

    def sleb(self):
        self.uleb()  # its value is never needed, only its length

    def skip(self, n):
        self.pos += n

    def memarg(self):
        self.uleb()
        self.uleb()

    def blocktype(self):
        if self.data[self.pos] == 0x40 or self.data[self.pos] in VALTYPES:
            self.pos += 1
        else:
            self.sleb()  # a type index as a signed 33-bit LEB


def simd(r, op, at, counts):
    """Skips one 0xfd instruction's immediates; records where the fma's opcode starts."""
    if op <= 0x0B or op in (0x5C, 0x5D):
        r.memarg()                       # loads, splat loads, store, load32/64_zero
    elif op in (0x0C, 0x0D):
        r.skip(16)                       # v128.const, i8x16.shuffle
    elif 0x15 <= op <= 0x22:
        r.skip(1)                        # extract/replace lane
    elif 0x54 <= op <= 0x5B:
        r.memarg()                       # load/store lane
        r.skip(1)
    elif op == PROTO_FMA:
        counts.append(at)
    elif op in PROTO_OTHER:
        raise ValueError(f"prototype relaxed-SIMD opcode 0x{op:x} at byte {at}: only f32x4.fma (0xaf) is mapped")
    elif op >= 0x100:
        raise ValueError(f"final relaxed-SIMD opcode 0x{op:x} at byte {at}: this module was renumbered already")


def instruction(r, fmas):
    op = r.byte()
    if op in (0x02, 0x03, 0x04, 0x06):   # block, loop, if, try
        r.blocktype()
    elif op in (0x07, 0x08, 0x09, 0x0C, 0x0D, 0x10, 0x12, 0x18, 0x20, 0x21, 0x22, 0x23, 0x24,
                0x25, 0x26, 0xD2):
        r.uleb()                         # catch, throw, rethrow, br, br_if, call, …, ref.func
    elif op == 0x0E:                     # br_table
        for _ in range(r.uleb() + 1):
            r.uleb()
    elif op in (0x11, 0x13):             # call_indirect, return_call_indirect
        r.uleb()
        r.uleb()
    elif op == 0x1C:                     # select with types
        r.skip(r.uleb())
    elif 0x28 <= op <= 0x3E:
        r.memarg()
    elif op in (0x3F, 0x40):             # memory.size, memory.grow
        r.uleb()
    elif op in (0x41, 0x42):
        r.sleb()
    elif op == 0x43:
        r.skip(4)
    elif op == 0x44:
        r.skip(8)
    elif op == 0xD0:                     # ref.null
        r.skip(1)
    elif op == 0xFC:
        sub = r.uleb()
        if sub in (8, 12, 14):           # memory.init, table.init, table.copy
            r.uleb()
            r.uleb()
        elif sub in (9, 11, 13, 15, 16, 17):
            r.uleb()
        elif sub == 10:                  # memory.copy
            r.uleb()
            r.uleb()
    elif op == 0xFD:
        at = r.pos
        simd(r, r.uleb(), at, fmas)
    elif op == 0xFE:                     # atomics
        if r.uleb() != 0x03:
            r.memarg()
        else:
            r.skip(1)
    return op


def fma_offsets(data):
    """Byte offsets of every prototype f32x4.fma opcode (after its 0xfd prefix) in the code."""
    if data[:8] != b"\0asm\x01\0\0\0":
        raise ValueError("not a wasm module (version 1)")
    r = Reader(data, 8)
    fmas = []
    while r.pos < len(data):
        section, size = r.byte(), r.uleb()
        end = r.pos + size
        if section == 10:
            for _ in range(r.uleb()):
                body_end = r.uleb()
                body_end += r.pos
                for _ in range(r.uleb()):
                    r.uleb()
                    r.skip(1)
                while r.pos < body_end:
                    instruction(r, fmas)
                if r.pos != body_end:
                    raise ValueError(f"a function body ends at byte {r.pos}, its size says {body_end}")
        r.pos = end
    return fmas


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: wasm_relaxed.py FILE.wasm")
    path = sys.argv[1]
    data = bytearray(open(path, "rb").read())
    try:
        fmas = fma_offsets(data)
    except (ValueError, IndexError) as e:
        sys.exit(f"{path}: {e}")
    if not fmas:
        sys.exit(f"{path}: no f32x4.fma (0xfd 0xaf): was it built with -mrelaxed-simd?")
    for at in fmas:
        if data[at:at + 2] != b"\xaf\x01":
            sys.exit(f"{path}: the fma opcode at byte {at} is not the two-byte LEB128 0xaf 0x01")
        data[at:at + 2] = bytes((0x80 | (FINAL_MADD & 0x7F), FINAL_MADD >> 7))
    open(path, "wb").write(data)
    print(f"{path}: {len(fmas)} f32x4.fma renumbered to f32x4.relaxed_madd")


if __name__ == "__main__":
    main()
