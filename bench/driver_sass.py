"""The NVIDIA driver's machine code (SASS) for the kernels a run compiled, from the driver's shader disk cache.

The NVIDIA Vulkan driver keeps compiled pipelines in its disk cache as zstd frames, and each frame holds the
kernel's SASS as raw instructions. That code shows where a kernel spends its instructions and which of the SM's
pipes they load. Capture a run's cache, then disassemble it here:

    __GL_SHADER_DISK_CACHE_PATH=/tmp/glc __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 \\
        gpuops-bench targets --only layouts --layouts broadcast --match 'modulus_floor float32$'
    python bench/driver_sass.py /tmp/glc sass/       # one sass/kNN.sass per kernel, in the order compiled

Needs `zstd` and `nvdisasm` (the nvidia-cuda-nvdisasm wheel has it; --nvdisasm names it) on this machine, not
on the GPU's. NVIDIA only, SM 9.0 by default (--arch). Not a dependency of gpuops.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ZSTD_MAGIC = bytes.fromhex("28b52ffd")
EXIT = bytes.fromhex("4d79000000000000")  # the low half of SM 9.0's EXIT instruction
INSTRUCTION = 16  # bytes per SM 7.0+ instruction
HEADER_BYTES = 280  # a frame's code starts after at least this much header (seen: 312-408)
TAIL_LIMIT = 40  # instructions after the last EXIT that may still be code (its BRA-to-self loop, padding)


def frames(blob: bytes) -> list[bytes]:
    """The decompressed zstd frames of one cache file."""
    starts = [m.start() for m in re.finditer(re.escape(ZSTD_MAGIC), blob)]
    out = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(blob)
        done = subprocess.run(["zstd", "-d", "-c", "-q"], input=blob[start:end], capture_output=True,
                              check=False)
        out.append(done.stdout)  # a truncated frame still yields its decoded prefix
    return out


class Disassembler:
    def __init__(self, nvdisasm: str, arch: str):
        self.nvdisasm, self.arch = nvdisasm, arch
        self.scratch = Path(tempfile.mkdtemp(prefix="driver_sass_")) / "code.bin"

    def __call__(self, code: bytes) -> str | None:
        """nvdisasm's listing of raw instructions, or None where they do not all decode."""
        self.scratch.write_bytes(code)
        done = subprocess.run([self.nvdisasm, "-b", self.arch, str(self.scratch)], capture_output=True, text=True,
                              check=False)
        return done.stdout if done.returncode == 0 else None


def kernel_code(frame: bytes, disassemble: Disassembler) -> str | None:
    """The listing of the kernel in one frame: from the earliest offset that decodes (instructions are aligned
    like the last EXIT) through the last EXIT and whatever code follows it."""
    exits = [m.start() for m in re.finditer(re.escape(EXIT), frame)]
    if not exits:
        return None
    last = exits[-1]
    end = last + INSTRUCTION
    while end + INSTRUCTION <= len(frame) and end - last < TAIL_LIMIT * INSTRUCTION:
        if disassemble(frame[last:end + INSTRUCTION]) is None:
            break
        end += INSTRUCTION
    first = last % INSTRUCTION + INSTRUCTION * max(0, (HEADER_BYTES - last % INSTRUCTION) // INSTRUCTION)
    for start in range(first, last, INSTRUCTION):
        listing = disassemble(frame[start:end])
        if listing is not None:
            return listing
    return None


def instructions(listing: str) -> list[str]:
    """The instructions of a listing, one string each (address comments and encodings dropped)."""
    return [m.group(1).strip() for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", listing)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", help="the directory __GL_SHADER_DISK_CACHE_PATH named")
    parser.add_argument("out", help="directory for the listings (kNN.sass, one per kernel)")
    parser.add_argument("--nvdisasm", default=shutil.which("nvdisasm"), help="path of nvdisasm")
    parser.add_argument("--arch", default="SM90", help="the GPU's architecture as nvdisasm names it (H100/H200: SM90)")
    args = parser.parse_args(argv)
    if not args.nvdisasm:
        parser.error("nvdisasm not found: pip install nvidia-cuda-nvdisasm, then pass --nvdisasm .../bin/nvdisasm")
    if not shutil.which("zstd"):
        parser.error("zstd not found (Debian: apt install zstd)")
    caches = sorted(Path(args.cache).rglob("*.bin"))
    if not caches:
        parser.error(f"no *.bin cache files under {args.cache}")
    os.makedirs(args.out, exist_ok=True)
    disassemble = Disassembler(args.nvdisasm, args.arch)
    count = 0
    for cache in caches:
        for frame in frames(cache.read_bytes()):
            listing = kernel_code(frame, disassemble)
            if listing is None:
                continue  # a frame of metadata, or one whose code this tool cannot find
            path = Path(args.out) / f"k{count:02d}.sass"
            path.write_text(listing)
            print(f"{path}: {len(instructions(listing))} instructions ({cache.name})")
            count += 1
    if not count:
        print("no kernel code found", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
