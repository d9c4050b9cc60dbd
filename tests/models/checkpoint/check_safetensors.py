#!/usr/bin/env python3
"""Reads a safetensors file written by grove with Hugging Face's safetensors library.

What it is: a by-hand interoperability check (not run by CI, which has no safetensors package).
It loads FILE with safetensors.numpy.load_file (the reference reader, which checks the header,
the dtypes and that the offsets tile the data), prints the metadata and, for each tensor, its
name, dtype, shape and a checksum of its values (sum and a CRC-32 of its little-endian bytes),
and recomputes grove's "grove.data_crc32" (CRC-32 of the data section) from the raw file.

What it is not: a second implementation of the format; it only reads the header length to find
the data section for the checksum.

Usage:
    pip install --break-system-packages safetensors numpy   # if they are missing
    python3 tests/models/checkpoint/check_safetensors.py FILE.safetensors
A file from the tests (every grove dtype, 0-d, empty and non-contiguous tensors):
    GROVE_CHECKPOINT_TEST_KEEP=/tmp/all.safetensors models_checkpoint_tests \
        --gtest_filter='SafetensorsTest.RoundTrips*'
Exits 1 if the library refuses the file or grove's checksum does not match.
"""
import json
import struct
import sys
import zlib

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    path = sys.argv[1]
    tensors = load_file(path)
    with safe_open(path, framework="numpy") as file:
        metadata = file.metadata() or {}
    print(f"file: {path}")
    print(f"metadata: {json.dumps(metadata, sort_keys=True)}")
    for name in sorted(tensors):
        array = tensors[name]
        little_endian = array.astype(array.dtype.newbyteorder("<"), copy=False)
        values_crc = zlib.crc32(little_endian.tobytes())
        total = array.sum(dtype=np.float64) if array.size else 0.0
        print(f"  {name}: dtype={array.dtype} shape={list(array.shape)} "
              f"sum={total:.9g} crc32(values)={values_crc:08x}")

    with open(path, "rb") as raw:
        contents = raw.read()
    (header_length,) = struct.unpack("<Q", contents[:8])
    data_crc = zlib.crc32(contents[8 + header_length:])
    stored = metadata.get("grove.data_crc32")
    if stored is None:
        print(f"grove.data_crc32: absent (not written by grove); data crc32={data_crc:08x}")
        return 0
    verdict = "matches" if int(stored, 16) == data_crc else "DOES NOT MATCH"
    print(f"grove.data_crc32: {stored}, recomputed {data_crc:08x}: {verdict}")
    return 0 if verdict == "matches" else 1


if __name__ == "__main__":
    sys.exit(main())
