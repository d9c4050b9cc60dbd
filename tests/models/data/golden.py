#!/usr/bin/env python3
"""Golden values of the data tests (tests/models/data), computed independently of grove.

Run it with plain python3 (no packages needed); its output is pasted into the tests:
  - fashion_mnist_test.cpp: the normalised pixel (byte / 255 - 0.2860) / 0.3530, each step
    rounded to float32 as the reference harness computes it in float32 (rounding the exact
    double result of each float32 operation gives the float32 result: double has more than
    2 * 24 + 2 bits);
  - loader_test.cpp: the loader's epoch permutation from the recipe written in
    models/data/epoch_order.h (splitmix64, Fisher-Yates from the back, Lemire's bounded draw).
"""
import struct

MASK = (1 << 64) - 1


def f32(value):
    return struct.unpack("f", struct.pack("f", value))[0]


def normalised_pixel(byte):
    scaled = f32(f32(byte) / f32(255.0))
    return f32(f32(scaled - f32(0.2860)) / f32(0.3530))


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def epoch_permutation(count, seed, epoch):
    state = (mix(seed) + epoch) & MASK
    order = list(range(count))

    def next_word():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & MASK
        return mix(state)

    for i in range(count - 1, 0, -1):
        bound = i + 1
        threshold = ((1 << 64) - bound) % bound
        while True:
            product = next_word() * bound
            if product & MASK >= threshold:
                j = product >> 64
                break
        order[i], order[j] = order[j], order[i]
    return order


if __name__ == "__main__":
    for byte in (0, 1, 37, 128, 200, 255):
        value = normalised_pixel(byte)
        print(f"{{{byte}, 0x{struct.unpack('>I', struct.pack('>f', value))[0]:08x}}},  // {value!r}")
    for count, seed, epoch in ((10, 42, 3), (10, 0, 0), (16, 7, 1)):
        print(f"epoch_permutation({count}, {seed}, {epoch}) = {epoch_permutation(count, seed, epoch)}")
