#!/usr/bin/env python3
"""Writes the seed corpora of grove's fuzz targets: tests/fuzz/corpus/<target>/.

Valid inputs of every kind each reader accepts, plus a few handcrafted bad ones (each named for
what is wrong with it). Run from anywhere: python3 tests/fuzz/make_seeds.py. The files are small
(the whole corpus is a few tens of kilobytes); rerunning rewrites them identically. Inputs the
fuzzer found and scripts/fuzz.sh --merge added live beside them and are left alone.
"""
import gzip
import json
import struct
import zlib
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"


def write(target, name, data):
    path = CORPUS / target / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


def idx(sizes, data, type_byte=0x08):
    header = bytes([0, 0, type_byte, len(sizes)])
    return header + b"".join(struct.pack(">I", s) for s in sizes) + data


def gz(data):
    return gzip.compress(data, mtime=0)


def idx_seeds():
    labels = idx([5], bytes([0, 9, 3, 1, 7]))
    images = idx([2, 3, 4], bytes(range(24)))
    write("idx", "labels_5", labels)
    write("idx", "images_2x3x4", images)
    write("idx", "images_2x3x4.gz", gz(images))
    write("idx", "labels_5_two_members.gz", gz(labels[:6]) + gz(labels[6:]))
    write("idx", "empty_0x3", idx([0, 3], b""))
    write("idx", "bad_type_float32", idx([2], bytes(8), type_byte=0x0D))
    write("idx", "bad_truncated", idx([4, 4], bytes(10)))
    write("idx", "bad_trailing_bytes", idx([2], bytes(5)))
    write("idx", "bad_huge_sizes", idx([0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF], bytes(4)))
    write("idx", "bad_trailing_garbage.gz", gz(labels) + b"junk")


def fashion_mnist_input(limit_byte, images, labels):
    return bytes([limit_byte]) + struct.pack("<I", len(images)) + images + labels


def fashion_mnist_seeds():
    pixels = bytes((i * 7) % 256 for i in range(2 * 28 * 28))
    images = idx([2, 28, 28], pixels)
    write("fashion_mnist", "two_samples", fashion_mnist_input(0, images, idx([2], bytes([3, 9]))))
    write("fashion_mnist", "two_samples_limit_1",
          fashion_mnist_input(2, images, idx([2], bytes([0, 1]))))
    write("fashion_mnist", "bad_label_10", fashion_mnist_input(0, images, idx([2], bytes([3, 10]))))
    write("fashion_mnist", "bad_count_mismatch",
          fashion_mnist_input(0, images, idx([3], bytes([1, 2, 3]))))
    write("fashion_mnist", "bad_image_side",
          fashion_mnist_input(0, idx([1, 27, 28], bytes(27 * 28)), idx([1], bytes([4]))))


def text_seeds():
    # byte 0: validation fraction * 256, byte 1: block - 1, byte 2: batch - 1, then the text.
    text = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
    write("text_corpus", "ascii", bytes([26, 7, 3]) + text.encode())
    write("text_corpus", "utf8", bytes([128, 3, 1]) + "naïve café, Größe, 東京\n".encode())
    write("text_corpus", "no_validation", bytes([0, 0, 0]) + b"ab")
    write("text_corpus", "bad_block_too_long", bytes([26, 63, 7]) + b"short text")
    write("text_corpus", "bad_empty", bytes([26, 7, 3]))


def safetensors(entries, data, metadata=None, checksum=True, pad=True):
    """A safetensors file: entries is a list of (name, dtype, shape, begin, end)."""
    header = {}
    meta = dict(metadata or {})
    if checksum:
        meta["grove.data_crc32"] = "%08x" % (zlib.crc32(data) & 0xFFFFFFFF)
    if meta:
        header["__metadata__"] = meta
    for name, dtype, shape, begin, end in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    weight = struct.pack("<6f", 1, -2, 3.5, 0, 1e-3, 7)
    bias = struct.pack("<3f", 0.5, 0.25, -1)
    model = [("weight", "F32", [2, 3], 0, 24), ("bias", "F32", [3], 24, 36)]
    write("safetensors", "model", safetensors(model, weight + bias, {"grove.model": "mlp"}))
    write("safetensors", "model_no_checksum", safetensors(model, weight + bias, checksum=False))
    others = [("ids", "I64", [2], 0, 16), ("steps", "I32", [1], 16, 20),
              ("scale", "F64", [], 20, 28), ("mask", "BOOL", [3], 28, 31),
              ("none", "F32", [0, 4], 31, 31)]
    data = struct.pack("<qqid", 5, -1, 3, 0.5) + bytes([1, 0, 1])
    write("safetensors", "every_dtype", safetensors(others, data))
    write("safetensors", "bad_bool_byte", safetensors([("mask", "BOOL", [2], 0, 2)], bytes([1, 2])))
    write("safetensors", "bad_checksum",
          safetensors(model, weight + bias, {"grove.data_crc32": "00000000"}, checksum=False))
    write("safetensors", "bad_gap", safetensors([("weight", "F32", [2, 3], 4, 28)], bytes(28)))
    write("safetensors", "bad_overlap",
          safetensors([("a", "F32", [2], 0, 8), ("b", "F32", [2], 4, 12)], bytes(12)))
    write("safetensors", "bad_dtype_f16", safetensors([("h", "F16", [2], 0, 4)], bytes(4)))
    write("safetensors", "bad_shape_mismatch", safetensors([("w", "F32", [3], 0, 8)], bytes(8)))
    write("safetensors", "bad_header_length", struct.pack("<Q", 1 << 40) + b"{}")
    write("safetensors", "bad_not_json", struct.pack("<Q", 4) + b"{\"a\"")


def checkpoint_config(model):
    config = {"model": model, "device": "cpu", "mode": "eager", "epochs": 5, "steps": 0,
              "batch_size": 128, "optimizer": "sgd", "lr": 0.1, "momentum": 0.9,
              "weight_decay": 0.0, "schedule": "cosine", "warmup_steps": 0, "step_size": 1000,
              "gamma": 0.1, "clip_grad_norm": 0.0, "seed": 0, "data": "", "train_limit": 0,
              "test_limit": 0, "eval_batches": 8, "eval_every": 500, "sample_tokens": 200,
              "temperature": 0.8}
    if model == "gpt":
        config.update({"warmup_steps": 100, "epochs": 1, "steps": 2000, "batch_size": 32,
                       "optimizer": "adamw", "lr": 3e-4, "weight_decay": 0.01})
    return json.dumps(config, separators=(",", ":"), sort_keys=True)


def checkpoint_seeds():
    # Lines: grove.format, grove.model, grove.config, grove.position.
    position = json.dumps({"epoch": 1, "next_batch": 3, "rng_offset": 4, "rng_seed": 0,
                           "steps_done": 10, "window_offset": 0}, separators=(",", ":"),
                          sort_keys=True)
    for model in ("mlp", "gpt"):
        write("checkpoint", model, "\n".join(["grove-checkpoint-1", model,
                                              checkpoint_config(model), position]))
    write("checkpoint", "bad_format", "grove-checkpoint-0\nmlp\n{}\n{}")
    write("checkpoint", "bad_model_disagrees",
          "\n".join(["grove-checkpoint-1", "cnn", checkpoint_config("mlp"), position]))
    write("checkpoint", "bad_position",
          "\n".join(["grove-checkpoint-1", "mlp", checkpoint_config("mlp"), '{"epoch":"x"}']))
    write("checkpoint", "bad_config_lr",
          "\n".join(["grove-checkpoint-1", "mlp",
                     checkpoint_config("mlp").replace('"lr":0.1', '"lr":-1'), position]))


def args_seeds():
    # One word per line, after "grove".
    lines = {
        "train_mlp": ["train", "--model", "mlp", "--device", "cpu", "--epochs", "1",
                      "--steps", "5"],
        "train_cnn_step": ["train", "--model=cnn", "--lr", "0.05", "--schedule", "step",
                           "--optimizer", "sgd", "--momentum", "0.5", "--batch-size", "64"],
        "train_gpt": ["train", "--model", "gpt", "--steps", "10", "--mode", "graphed",
                      "--clip-grad-norm", "1", "--warmup-steps", "3", "--seed", "7", "--json"],
        "train_resume": ["train", "--resume", "--checkpoint", "run.safetensors", "--plain"],
        "train_limits": ["train", "--train-limit", "100", "--test-limit", "50", "--metrics",
                         "m.csv", "--checkpoint-every", "10", "--read-every", "2", "--explain"],
        "eval": ["eval", "--checkpoint", "run.safetensors", "--device", "cpu", "--json",
                 "--save-logits", "l.safetensors", "--logits-count", "16"],
        "sample": ["sample", "--checkpoint", "gpt.safetensors", "--prompt", "Once",
                   "--tokens", "20", "--temperature", "0", "--seed", "3"],
        "plot": ["plot", "metrics.csv", "-o", "curve.svg", "--title", "run"],
        "info": ["info"],
        "demo": ["demo"],
        "help": ["--help"],
        "train_help": ["train", "--help"],
        "bad_unknown_flag": ["train", "--speed", "3"],
        "bad_device": ["train", "--device", "cuda:99"],
        "bad_epochs": ["train", "--epochs", "-1"],
    }
    for name, words in lines.items():
        write("args", name, "\n".join(words))


if __name__ == "__main__":
    idx_seeds()
    fashion_mnist_seeds()
    text_seeds()
    safetensors_seeds()
    checkpoint_seeds()
    args_seeds()
