"""Fashion-MNIST training: the CNN of `tg train-mnist` (tinygrad's "beautiful MNIST"), Adam with a one-cycle
learning rate, each step under TinyJit. Usage: mnist.py [--steps 1000] [--batch 128] [--eval 10000]
[--min-acc 0.90]; exits non-zero below --min-acc."""
import argparse, time
import numpy as np
from tinygrad_cpp import Tensor, TinyJit, nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=1000)
p.add_argument("--batch", type=int, default=128)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--seed", type=int, default=42)
p.add_argument("--eval", type=int, default=10000, help="test images to evaluate")
p.add_argument("--min-acc", type=float, default=0.90)
args = p.parse_args()

X_train, Y_train, X_test, Y_test = (t.numpy() for t in nn.datasets.fashion_mnist())
print(f"data: {len(Y_train)} training and {len(Y_test)} test images")

Tensor.manual_seed(args.seed)
layers = [nn.Conv2d(1, 32, 5), Tensor.relu, nn.Conv2d(32, 32, 5), Tensor.relu, nn.BatchNorm(32), Tensor.max_pool2d,
          nn.Conv2d(32, 64, 3), Tensor.relu, nn.Conv2d(64, 64, 3), Tensor.relu, nn.BatchNorm(64), Tensor.max_pool2d,
          lambda x: x.flatten(1), nn.Linear(576, 10)]
params = nn.state.get_parameters([l for l in layers if isinstance(l, nn.Module) and not isinstance(l, nn.BatchNorm)])
params += [t for l in layers if isinstance(l, nn.BatchNorm) for t in (l.weight, l.bias)]
opt = nn.optim.Adam(params, lr=args.lr)
sched = nn.optim.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)
sampler = nn.datasets.BatchSampler(len(Y_train), args.batch, shuffle=True, seed=args.seed, drop_last=True)


@TinyJit
def train_step(x, y):
  loss = x.sequential(layers).sparse_categorical_crossentropy(y)
  opt.zero_grad()
  loss.backward()
  loss.realize(*opt.schedule_step())
  opt.zero_grad()
  return loss


def images(x): return Tensor(x.astype(np.float32) / 255.0)


start = time.perf_counter()
for step in range(args.steps):
  b = step % len(sampler)
  if b == 0 and step > 0: sampler.set_epoch(step // len(sampler))
  rows = sampler.batch(b)
  loss = train_step(images(X_train[rows]), Tensor(Y_train[rows].astype(np.int32))).item()
  sched.step()
  if (step + 1) % 50 == 0 or step == 0:
    el = time.perf_counter() - start
    print(f"step {step + 1:5d}/{args.steps} loss {loss:.3f} {args.batch * (step + 1) / el:.0f} img/s", flush=True)
print(f"trained in {time.perf_counter() - start:.1f} s")

for l in layers:
  if isinstance(l, nn.Module): l.eval()
pred = np.concatenate([images(X_test[i:i + 1000]).sequential(layers).argmax(axis=-1).numpy()
                       for i in range(0, args.eval, 1000)])[:args.eval]
acc = float((pred == Y_test[:args.eval]).mean())
print(f"test accuracy: {100 * acc:.2f}% on {args.eval} images")
assert acc >= args.min_acc, f"accuracy {acc:.4f} below {args.min_acc}"
