#!/usr/bin/env python3
"""Show that a change left existing kernels' code alone: compare the machine code of two cubins (each function's
.text.<name> section) and, optionally, the PTX of each .entry of two PTX files, function by function.

    nvcc -O3 -DNDEBUG -cubin -arch=sm_90a -I kernels kernels/gemm/sm90/wgmma_ws_sm90a.cu -o before.cubin  # (and -ptx)
    ... change the code, compile again to after.cubin / after.ptx ...
    scripts/compare_kernel_code.py before.cubin after.cubin [--ptx before.ptx after.ptx] \\
        [--rename 'REGEX=REPLACEMENT' ...]

BEFORE and AFTER may also be host object files as the build writes them (build/CMakeFiles/*.dir/kernels/...cu.o):
the cubins embedded in their fatbins are compared architecture by architecture (no cuobjdump needed).
Every function of BEFORE must be in AFTER with the same bytes; AFTER may hold new ones. Names are matched after
two normalizations: internal-linkage names carry a hash of the source path (_INTERNAL_<hash>_<n>_<file>_cu_<hash>),
dropped on both sides; and each --rename (a Python regex and its replacement) is applied to AFTER's names, e.g. a
template parameter added with value 0 for the existing instantiations:
    --rename '(gemm_wgmma_ws_kernelI(?:Li\\d+E){4})Li0E=\\1'
Exit 0 when every function of BEFORE is unchanged, 1 otherwise. No GPU, no CUDA tools needed (reads the ELF)."""
import argparse
import re
import struct
import sys

INTERNAL = re.compile(r"_INTERNAL_[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]+")
EM_CUDA = 190  # e_machine of a cubin


def cubins(path):
    """Architecture flags -> bytes of each cubin: the file itself, or those embedded in a host object's fatbin."""
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        sys.exit(f"{path}: not a 64-bit ELF file")
    if struct.unpack_from("<H", data, 0x12)[0] == EM_CUDA:
        return {struct.unpack_from("<I", data, 0x30)[0]: data}
    out = {}
    for m in re.finditer(b"\x7fELF\x02\x01", data):
        at = m.start()
        if at == 0 or struct.unpack_from("<H", data, at + 0x12)[0] != EM_CUDA:
            continue
        shoff, = struct.unpack_from("<Q", data, at + 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, at + 0x3A)
        out[struct.unpack_from("<I", data, at + 0x30)[0]] = data[at:at + shoff + shentsize * shnum]
    if not out:
        sys.exit(f"{path}: no cubin in it (a compressed fatbin? build with nvcc --compress-mode=none)")
    return out


def elf_sections(data):
    """Section name -> bytes of a 64-bit little-endian ELF (a cubin)."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    out = {}
    for name_off, kind, _flags, _addr, off, size, *_ in headers:
        name = data[names + name_off:data.index(b"\0", names + name_off)].decode()
        out[name] = b"" if kind == 8 else data[off:off + size]  # SHT_NOBITS holds no bytes
    return out


def ptx_entries(path):
    """Entry name -> its PTX text (from .entry to the next entry's .globl line)."""
    text = open(path).read()
    starts = list(re.finditer(r"\.entry (\S+)\(", text))
    out = {}
    for i, m in enumerate(starts):
        end = text.rfind("// .globl", m.start(), starts[i + 1].start()) if i + 1 < len(starts) else len(text)
        out[m.group(1)] = text[m.start():end].rstrip()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--ptx", nargs=2, metavar=("BEFORE_PTX", "AFTER_PTX"))
    ap.add_argument("--rename", action="append", default=[], help="REGEX=REPLACEMENT applied to AFTER's names")
    args = ap.parse_args()
    renames = [tuple(r.split("=", 1)) for r in args.rename]

    def rename(name):
        name = INTERNAL.sub("_INTERNAL_", name)
        for pattern, repl in renames:
            name = re.sub(pattern, repl, name)
        return name

    changed = compared = 0
    cb, ca = cubins(args.before), cubins(args.after)
    for arch in sorted(cb):
        tag = f"sm_{(arch >> 8) & 0xff}  " if len(cb) > 1 else ""
        before = {INTERNAL.sub("_INTERNAL_", k): v for k, v in elf_sections(cb[arch]).items() if k.startswith(".text.")}
        after = {rename(k): v for k, v in elf_sections(ca[arch]).items() if k.startswith(".text.")} if arch in ca else {}
        for name in sorted(before):
            same = after.get(name) == before[name]
            changed += not same
            compared += 1
            print(f"{'same' if same else 'CHANGED' if name in after else 'MISSING'}  machine code  {tag}{name[6:]}")
    if args.ptx:
        pb, pa = ptx_entries(args.ptx[0]), ptx_entries(args.ptx[1])
        by_new_name = {rename(k): (k, v) for k, v in pa.items()}
        for name in sorted(pb):
            old_name, body = by_new_name.get(rename(name), (None, None))
            same = body is not None and body.replace(old_name, name) == pb[name]
            changed += not same
            print(f"{'same' if same else 'CHANGED' if body is not None else 'MISSING'}  PTX           {name}")
    print(f"{compared} functions compared: {'all unchanged' if not changed else f'{changed} changed or missing'}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
