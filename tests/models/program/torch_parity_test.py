#!/usr/bin/env python3
"""grove's checkpoints in PyTorch: trains the mlp, the cnn and the resnet for a few steps with the
grove program, loads each checkpoint with safetensors.torch into the same model written in PyTorch,
and checks that PyTorch's logits on the inputs `grove eval --save-logits` wrote equal grove's
within 1e-5. Exits 77 (skipped) without torch and safetensors, or without Fashion-MNIST.

    torch_parity_test.py path/to/grove [fashion-mnist dir]
"""
import os
import subprocess
import sys
import tempfile

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from safetensors.torch import load_file
except ImportError as missing:
    print(f"skipped: {missing} (needs python3 with torch and safetensors)")
    sys.exit(77)

grove = sys.argv[1]
data = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist"
if not os.path.exists(os.path.join(data, "train-images-idx3-ubyte.gz")):
    print(f"skipped: no Fashion-MNIST in {data}")
    sys.exit(77)


class Mlp(nn.Module):  # grove's zoo::Mlp, by the same names
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 256), nn.Linear(256, 256), nn.Linear(256, 10)

    def forward(self, x):
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc3(F.relu(self.fc2(x)))


class Cnn(nn.Module):  # grove's zoo::Cnn
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(1, 32, 3, padding=1), nn.Conv2d(32, 64, 3, padding=1)
        self.fc1, self.fc2 = nn.Linear(3136, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class ResidualBlock(nn.Module):  # grove's zoo::ResidualBlock
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return F.relu(x + self.conv2(F.relu(self.conv1(x))))


class ResNet(nn.Module):  # grove's zoo::ResNet
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 16, 3, padding=1)
        self.block1, self.block2 = ResidualBlock(16), ResidualBlock(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.stem(x)), 2)
        x = self.block2(self.block1(x))
        return self.fc(F.avg_pool2d(x, 14).flatten(1))


torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
worst = 0.0
with tempfile.TemporaryDirectory() as work:
    for name, model in (("mlp", Mlp()), ("cnn", Cnn()), ("resnet", ResNet())):
        checkpoint = os.path.join(work, f"{name}.safetensors")
        logits_file = os.path.join(work, f"{name}_logits.safetensors")
        run = lambda *args: subprocess.run([grove, *args], check=True, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE)
        run("train", "--model", name, "--device", "cpu", "--epochs", "1", "--train-limit", "512",
            "--test-limit", "64", "--data", data, "--checkpoint", checkpoint)
        run("eval", "--checkpoint", checkpoint, "--device", "cpu", "--data", data,
            "--save-logits", logits_file, "--logits-count", "64")
        weights = {k: v for k, v in load_file(checkpoint).items() if not k.startswith("optimizer.")}
        model.load_state_dict(weights)  # strict: every name and shape must match
        saved = load_file(logits_file)
        with torch.no_grad():
            ours = model.eval()(saved["inputs"])
        difference = (ours - saved["logits"]).abs().max().item()
        print(f"{name}: {saved['logits'].shape[0]} samples, largest logit difference {difference:.3g}")
        worst = max(worst, difference)
# float32 on two CPU libraries (Eigen's and PyTorch's GEMMs and convolutions) sum in different
# orders; logits of order 10 differ in the last few bits, far below 1e-5.
if worst > 1e-5:
    print(f"FAIL: PyTorch's logits differ from grove's by {worst:.3g} (> 1e-5)")
    sys.exit(1)
print("torch_parity_test: passed")
