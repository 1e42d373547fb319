# Writes forward-op reference cases computed by PyTorch (and NumPy where PyTorch lacks the op) for
# test_ops.cpp. Usage: gen_ops.py OUT.json. Deterministic: fixed seeds, no timestamps.
import json
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(20240611)
warnings.filterwarnings('ignore', message='scatter_reduce')  # beta in PyTorch 1.13; the cases pin its results
torch.manual_seed(0)

TORCH = {'float32': torch.float32, 'float16': torch.float16, 'float64': torch.float64, 'int32': torch.int32,
         'int64': torch.int64, 'int8': torch.int8, 'uint8': torch.uint8, 'int16': torch.int16,
         'bool': torch.bool}
NAME = {v: k for k, v in TORCH.items()}
FLOATS = ['float32', 'float16', 'float64']
INTS = ['int32', 'int64', 'int8', 'uint8']
ALL = FLOATS + INTS + ['bool']
S = (3, 5, 7)
cases = []


def enc(v):
  if isinstance(v, (bool, np.bool_)): return int(v)
  if isinstance(v, (int, np.integer)): return int(v)
  v = float(v)
  if v != v: return 'nan'
  if v in (float('inf'), float('-inf')): return 'inf' if v > 0 else '-inf'
  return v


def tensor_json(t):
  vals = t.reshape(-1).tolist()
  if t.dtype == torch.float32:  # the shortest decimal that rounds back to the same float32
    vals = [float(str(np.float32(v))) if v == v and abs(v) != float('inf') else v for v in vals]
  return {'dtype': NAME[t.dtype], 'shape': list(t.shape), 'values': [enc(v) for v in vals]}


class In:
  """An input: a base tensor stored in the file plus an optional view applied on both sides."""
  def __init__(self, base, permute=None, slices=None):
    self.base, self.permute, self.slices = base, permute, slices

  def view(self):
    t = self.base
    if self.permute: t = t.permute(*self.permute)
    if self.slices:  # NumPy, since PyTorch has no negative steps
      t = torch.from_numpy(np.ascontiguousarray(t.numpy()[tuple(slice(*s) for s in self.slices)]))
    return t

  def json(self):
    j = tensor_json(self.base)
    if self.permute: j['permute'] = list(self.permute)
    if self.slices: j['slices'] = [list(s) for s in self.slices]
    return j


def rand(dtype, shape=S, kind='any'):
  n = int(np.prod(shape)) if shape else 1
  if dtype == 'bool': v = rng.random(n) < 0.5
  elif dtype in FLOATS:
    v = rng.standard_normal(n) * 2
    if kind == 'pos': v = np.abs(v) + 0.1
    if kind == 'unit': v = rng.uniform(0.05, 0.95, n)
    if kind == 'small': v = rng.uniform(-0.9, 0.9, n)
    if kind == 'ge1': v = np.abs(v) + 1.0
  else:
    lo, hi = {'int8': (-20, 20), 'uint8': (0, 50)}.get(dtype, (-50, 50))
    if kind == 'pos': lo, hi = 1, min(hi, 20)
    if kind == 'small': lo, hi = max(lo, -3), 4
    if kind == 'shift': lo, hi = 0, 4
    if kind == 'nonzero': v = rng.integers(1, 9, n) * rng.choice([-1, 1] if lo < 0 else [1], n)
    else: v = rng.integers(lo, hi, n)
  return torch.tensor(np.asarray(v).reshape(shape)).to(TORCH[dtype])


def run(fn, xs):
  """fn on the views; float16 ops PyTorch's CPU build lacks run in float32 and round to half."""
  try:
    return fn(*xs)
  except RuntimeError as e:
    if 'Half' not in str(e): raise
    r = fn(*[x.float() if x.dtype == torch.float16 else x for x in xs])
    return [t.half() for t in r] if isinstance(r, (list, tuple)) else r.half()


def add(name, op, ins, fn, args=None, out_dtype=None):
  ins = [i if isinstance(i, In) else In(i) for i in ins]
  out = run(fn, [i.view() for i in ins])
  outs = list(out) if isinstance(out, (list, tuple)) else [out]
  # out_dtype: our dtype rule differs from PyTorch's (see callers); uint32 has no PyTorch dtype, values are kept
  if isinstance(out_dtype, str) and out_dtype in TORCH: outs = [o.to(TORCH[out_dtype]) for o in outs]
  if isinstance(out_dtype, list): outs = [o.to(TORCH[d]) if d else o for o, d in zip(outs, out_dtype)]  # per output
  outs = [tensor_json(o.contiguous()) for o in outs]
  if out_dtype == 'uint32':
    for o in outs: o['dtype'] = 'uint32'
  assert name not in {c['name'] for c in cases}, name
  cases.append({'name': name, 'op': op, 'args': args or {}, 'inputs': [i.json() for i in ins], 'outputs': outs})


def specials(dtype):
  """Random values with NaN, +-Inf, +-0 and exact halves mixed in."""
  t = rand(dtype, (4, 9)).double()
  t.view(-1)[:12] = torch.tensor([float('nan'), float('inf'), -float('inf'), 0.0, -0.0, 0.5, -0.5, 1.5,
                                  -2.5, 2.5, 1e-3, -7.0], dtype=torch.float64)
  return t.to(TORCH[dtype])


# ---- creation ----
for dt in ['float32', 'int32', 'bool', 'float16', 'int64', 'uint8']:
  add(f'zeros/{dt}', 'zeros', [], lambda: torch.zeros(3, 4, dtype=TORCH[dt]), {'shape': [3, 4], 'dtype': dt})
  add(f'ones/{dt}', 'ones', [], lambda: torch.ones(2, 3, 2, dtype=TORCH[dt]), {'shape': [2, 3, 2], 'dtype': dt})
add('full/int', 'full', [], lambda: torch.full((2, 5), 7), {'shape': [2, 5], 'fill': 7}, out_dtype='int32')
add('full/float', 'full', [], lambda: torch.full((3,), -1.25), {'shape': [3], 'fill': -1.25})
add('full/bool', 'full', [], lambda: torch.full((2, 2), True), {'shape': [2, 2], 'fill': True})
add('full/float16', 'full', [], lambda: torch.full((4,), 0.1, dtype=torch.float16),
    {'shape': [4], 'fill': 0.1, 'dtype': 'float16'})
add('full/scalar', 'full', [], lambda: torch.full((), 3.5), {'shape': [], 'fill': 3.5})
for dt in ['float32', 'int8', 'bool', 'float16']:
  x = rand(dt, (2, 3))
  add(f'zeros_like/{dt}', 'zeros_like', [x], torch.zeros_like)
  add(f'ones_like/{dt}', 'ones_like', [x], torch.ones_like)
  add(f'full_like/{dt}', 'full_like', [x], lambda x: torch.full_like(x, 1), {'fill': 1})
add('ones_like/to_int64', 'ones_like', [rand('float32', (2, 2))], lambda x: torch.ones_like(x, dtype=torch.int64),
    {'dtype': 'int64'})
add('full_like/float_fill', 'full_like', [rand('float32', (3,))], lambda x: torch.full_like(x, 2.5), {'fill': 2.5})
for i, (a, b, s) in enumerate([(0, 10, 1), (3, 17, 4), (10, -5, -3), (0, 0, 1), (-4, 4, 1), (0, 1000, 7)]):
  add(f'arange/int{i}', 'arange', [], lambda: torch.arange(a, b, s), {'start': a, 'stop': b, 'step': s},
      out_dtype='int32')
for i, (a, b, s) in enumerate([(0.0, 1.0, 0.25), (-1.5, 2.0, 0.5), (5.0, 0.0, -0.75), (0.0, 3.3, 0.3)]):
  add(f'arange/float{i}', 'arange', [], lambda: torch.arange(a, b, s), {'start': a, 'stop': b, 'step': s})
add('arange/int64', 'arange', [], lambda: torch.arange(2, 9, 2), {'start': 2, 'stop': 9, 'step': 2, 'dtype': 'int64'})
add('arange/as_float', 'arange', [], lambda: torch.arange(0, 5, 1, dtype=torch.float32),
    {'start': 0, 'stop': 5, 'step': 1, 'dtype': 'float32'})
for i, (a, b, n, dt) in enumerate([(0.0, 1.0, 5, 'float32'), (-3.0, 7.0, 11, 'float32'), (2.0, 2.0, 4, 'float32'),
                                   (1.0, 0.0, 1, 'float32'), (0.0, 10.0, 6, 'int32'), (-1.0, 1.0, 9, 'float16'),
                                   (0.0, 1.0, 0, 'float32'), (0, 5, 3, 'float64')]):
  add(f'linspace/{i}', 'linspace', [], lambda: torch.linspace(a, b, n, dtype=TORCH[dt]),
      {'start': a, 'stop': b, 'steps': n, 'dtype': dt})
for n, m, dt in [(3, None, 'float32'), (2, 5, 'int32'), (4, 2, 'bool'), (1, None, 'float16'), (0, 3, 'float32')]:
  add(f'eye/{n}x{m}/{dt}', 'eye', [], lambda: torch.eye(n, m if m is not None else n, dtype=TORCH[dt]),
      {'n': n, 'dtype': dt} | ({'m': m} if m is not None else {}))
for dt in ALL + ['int16']:
  add(f'tensor/{dt}', 'tensor', [rand(dt, (2, 7))], lambda x: x.clone())
add('tensor/specials', 'tensor', [specials('float32')], lambda x: x.clone())
add('tensor/specials_f16', 'tensor', [specials('float16')], lambda x: x.clone())

# ---- elementwise unary ----
UNARY = {  # name: (torch fn, dtypes, input kind)
  'neg': (torch.neg, FLOATS + ['int32', 'int64', 'int8'], 'any'),
  'reciprocal': (torch.reciprocal, FLOATS + ['int32'], 'pos'),
  'sqrt': (torch.sqrt, FLOATS + ['int32', 'uint8'], 'pos'),
  'rsqrt': (torch.rsqrt, FLOATS + ['int32'], 'pos'),
  'exp': (torch.exp, FLOATS + ['int8'], 'any'),
  'exp2': (torch.exp2, FLOATS + ['int8'], 'any'),
  'log': (torch.log, FLOATS + ['int32'], 'pos'),
  'log2': (torch.log2, FLOATS + ['uint8'], 'pos'),
  'sin': (torch.sin, FLOATS + ['int32'], 'any'),
  'cos': (torch.cos, FLOATS + ['int32'], 'any'),
  'tan': (torch.tan, FLOATS, 'small'),
  'tanh': (torch.tanh, FLOATS + ['int32'], 'any'),
  'sigmoid': (torch.sigmoid, FLOATS + ['int32'], 'any'),
  'relu': (torch.relu, FLOATS + ['int32', 'int8'], 'any'),
  'gelu': (lambda x: F.gelu(x, approximate='tanh'), FLOATS, 'any'),
  'silu': (F.silu, FLOATS, 'any'),
  'softplus': (F.softplus, FLOATS, 'any'),
  'logsigmoid': (F.logsigmoid, ['float32', 'float64'], 'any'),
  'leaky_relu': (F.leaky_relu, FLOATS, 'any'),
  'abs': (torch.abs, FLOATS + ['int32', 'int64', 'int8', 'uint8'], 'any'),
  'sign': (torch.sign, FLOATS + ['int32', 'int8', 'uint8', 'bool'], 'any'),
  'square': (torch.square, FLOATS + ['int32', 'int8'], 'small'),
  'floor': (torch.floor, FLOATS + ['int32'], 'any'),
  'ceil': (torch.ceil, FLOATS + ['int32'], 'any'),
  'round': (torch.round, FLOATS + ['int32'], 'any'),
  'trunc': (torch.trunc, FLOATS + ['int32'], 'any'),
  'logical_not': (torch.logical_not, ['float32', 'int32', 'uint8', 'bool'], 'any'),
  'bitwise_not': (torch.bitwise_not, INTS + ['bool'], 'any'),
  'isnan': (torch.isnan, FLOATS + ['int32'], 'any'),
  'isinf': (torch.isinf, FLOATS + ['int32'], 'any'),
  'isfinite': (torch.isfinite, FLOATS, 'any'),
}
for name, (fn, dts, kind) in UNARY.items():
  for dt in dts:
    add(f'{name}/{dt}', name, [rand(dt, S, kind)], fn)
  base = rand(dts[0], (7, 3, 5), kind)  # a permuted and a strided view of a buffer
  add(f'{name}/permuted', name, [In(base, permute=(1, 2, 0))], fn)
  add(f'{name}/strided', name, [In(base, slices=[(None, None, 2), (1, 3), (None, None, -2)])], fn)
SPECIAL_OK = ['neg', 'reciprocal', 'sqrt', 'exp', 'exp2', 'log', 'log2', 'sigmoid', 'abs', 'sign', 'floor', 'ceil',
              'round', 'trunc', 'isnan', 'isinf', 'isfinite', 'logical_not', 'square', 'sin', 'tanh']
for name in SPECIAL_OK:
  # sign(NaN) is NaN as in NumPy (PyTorch 1.13 gives 0)
  fn = (lambda x: torch.from_numpy(np.sign(x.numpy()))) if name == 'sign' else UNARY[name][0]
  add(f'{name}/specials', name, [specials('float32')], fn)
  add(f'{name}/specials_f16', name, [specials('float16')], fn)
add('isinf/positive', 'isinf', [specials('float32')], torch.isposinf, {'negative': False})
add('isinf/negative', 'isinf', [specials('float32')], torch.isneginf, {'positive': False})
add('leaky_relu/slope', 'leaky_relu', [rand('float32')], lambda x: F.leaky_relu(x, 0.2), {'slope': 0.2})
add('softplus/beta', 'softplus', [rand('float32')], lambda x: F.softplus(x, 2.0), {'beta': 2.0})
add('exp/large', 'exp', [torch.tensor([80.0, 88.0, 89.0, -100.0, -104.0, 0.0])], torch.exp)
add('sigmoid/large', 'sigmoid', [torch.tensor([-100.0, -30.0, 30.0, 100.0, 0.0])], torch.sigmoid)
add('tanh/large', 'tanh', [torch.tensor([-50.0, -10.0, 10.0, 50.0, 1e-4, -1e-4])], torch.tanh)
add('sin/large', 'sin', [torch.tensor([100.0, -1000.0, 12345.678, 3.14159265, 1e-6])], torch.sin)

# ---- elementwise binary ----
def no_bool_sub(a, b): return a - b
BINARY = {  # name: (torch fn, dtypes, kind of the second input)
  'add': (torch.add, ALL, 'any'),
  'sub': (torch.sub, FLOATS + INTS, 'any'),
  'mul': (torch.mul, ALL, 'any'),
  'div': (torch.true_divide, FLOATS + ['int32', 'int8'], 'nonzero'),
  'div_trunc': (lambda a, b: torch.div(a, b, rounding_mode='trunc'), FLOATS + INTS, 'nonzero'),
  'div_floor': (lambda a, b: torch.div(a, b, rounding_mode='floor'), FLOATS + INTS, 'nonzero'),
  'mod': (torch.remainder, FLOATS + INTS, 'nonzero'),
  'fmod': (torch.fmod, FLOATS + INTS, 'nonzero'),
  'pow': (torch.pow, FLOATS + ['int32', 'int64'], 'shift'),
  'maximum': (torch.maximum, ALL, 'any'),
  'minimum': (torch.minimum, ALL, 'any'),
  'lt': (torch.lt, FLOATS + INTS + ['bool'], 'any'),
  'le': (torch.le, FLOATS + INTS, 'any'),
  'gt': (torch.gt, FLOATS + INTS, 'any'),
  'ge': (torch.ge, FLOATS + INTS, 'any'),
  'eq': (torch.eq, FLOATS + INTS + ['bool'], 'any'),
  'ne': (torch.ne, FLOATS + INTS + ['bool'], 'any'),
  'logical_and': (torch.logical_and, ['float32', 'int32', 'bool'], 'any'),
  'logical_or': (torch.logical_or, ['float32', 'int32', 'bool'], 'any'),
  'logical_xor': (torch.logical_xor, ['float32', 'int32', 'bool'], 'any'),
  'bitwise_and': (torch.bitwise_and, INTS + ['bool'], 'any'),
  'bitwise_or': (torch.bitwise_or, INTS + ['bool'], 'any'),
  'bitwise_xor': (torch.bitwise_xor, INTS + ['bool'], 'any'),
  'lshift': (torch.bitwise_left_shift, ['int32', 'int64', 'uint8'], 'shift'),
  'rshift': (torch.bitwise_right_shift, INTS, 'shift'),
  'logaddexp': (torch.logaddexp, ['float32', 'float64'], 'any'),
}
for name, (fn, dts, kind) in BINARY.items():
  for dt in dts:
    a_kind = 'small' if name == 'pow' and dt in INTS else 'pos' if name == 'pow' else 'any'
    add(f'{name}/{dt}', name, [rand(dt, S, a_kind), rand(dt, S, kind)], fn)
  a_kind = 'pos' if name == 'pow' else 'any'
  f, i = dts[0], next((d for d in dts[1:] if d in INTS), dts[-1])
  add(f'{name}/broadcast', name, [rand(f, (3, 1, 7), a_kind), rand(f, (5, 1), kind)], fn)
  add(f'{name}/broadcast_rank0', name, [rand(i, (), a_kind), rand(i, (4, 3), kind)], fn)
  base = rand(f, (7, 5, 3), a_kind)
  add(f'{name}/views', name, [In(base, permute=(2, 1, 0)),
                                    In(rand(f, (3, 10, 7), kind), slices=[(None,), (None, None, 2)])],
      fn)
  if name not in ('bitwise_and', 'bitwise_or', 'bitwise_xor', 'lshift', 'rshift', 'pow'):
    add(f'{name}/mixed_int_float', name, [rand('int32', (5, 7), 'pos' if name == 'pow' else 'any'),
                                          rand('float16', (5, 7), kind)], fn)
  if name not in ('logaddexp',):
    add(f'{name}/int8_uint8', name, [rand('int8', (2, 9), 'small' if name == 'pow' else 'any'),
                                     rand('uint8', (2, 9), kind)], fn)
    add(f'{name}/int32_int64', name, [rand('int32', (6,), 'small' if name == 'pow' else 'any'),
                                      rand('int64', (6,), kind)], fn)
# numbers are weak constants: int_tensor * 2 stays int, int_tensor * 2.5 is float32, half * 2.5 stays half
for name, fn in [('add', torch.add), ('sub', torch.sub), ('mul', torch.mul), ('div', torch.true_divide),
                 ('maximum', lambda a, b: torch.maximum(a, torch.tensor(b, dtype=a.dtype))),
                 ('pow', torch.pow), ('lt', torch.lt), ('eq', torch.eq), ('mod', torch.remainder)]:
  for dt, v in [('int32', 3), ('int32', 2.5), ('float16', 2.5), ('float32', -2), ('int8', 2), ('uint8', 4)]:
    if name == 'maximum' and isinstance(v, float) and dt in INTS: continue
    add(f'{name}/scalar/{dt}/{v}', name + '_scalar', [rand(dt, (4, 5), 'pos' if name == 'pow' else 'any')],
        lambda a: fn(a, v), {'scalar': v})
  if name in ('sub', 'div', 'pow', 'mod'):
    add(f'{name}/rscalar', name + '_scalar', [rand('float32', (4, 5), 'pos')], lambda a: fn(torch.tensor(3.0), a),
        {'scalar': 3.0, 'reverse': True})
for name in ['maximum', 'minimum', 'add', 'mul', 'lt', 'eq', 'ne', 'pow', 'div']:
  a, b = specials('float32'), specials('float32').flip(0)
  add(f'{name}/specials', name, [a, b], BINARY[name][0])

# ---- ternary ----
for dt in ['float32', 'int32', 'float16', 'bool', 'uint8']:
  add(f'where/{dt}', 'where', [rand('bool'), rand(dt), rand(dt)], torch.where)
add('where/broadcast', 'where', [rand('bool', (5, 1)), rand('float32', (3, 1, 7)), rand('float32', (7,))], torch.where)
add('where/promote', 'where', [rand('bool', (4, 4)), rand('int32', (4, 4)), rand('float16', (4, 4))], torch.where)
add('where/int_cond', 'where', [rand('int32', (4, 4), 'small'), rand('float32', (4, 4)), rand('float32', (4,))],
    lambda c, a, b: torch.where(c != 0, a, b))
add('where/scalars', 'where_scalars', [rand('bool', (3, 4))], lambda c: torch.where(c, 1.5, -2.0).float(),
    {'x': 1.5, 'y': -2.0})
add('where/scalar_y', 'where_scalar_y', [rand('bool', (3, 4)), rand('int32', (3, 4))],
    lambda c, a: torch.where(c, a, torch.tensor(0, dtype=torch.int32)), {'y': 0})
for dt in ['float32', 'int32', 'float16', 'int8']:
  add(f'clamp/{dt}', 'clamp', [rand(dt)], lambda x: torch.clamp(x, -1, 2), {'min': -1, 'max': 2})
add('clamp/min_only', 'clamp', [rand('float32')], lambda x: torch.clamp(x, min=0.5), {'min': 0.5})
add('clamp/max_only', 'clamp', [rand('int64')], lambda x: torch.clamp(x, max=3), {'max': 3})
add('clamp/specials', 'clamp', [specials('float32')], lambda x: torch.clamp(x, -1.0, 1.0), {'min': -1.0, 'max': 1.0})
add('clamp/tensors', 'clamp_tensors', [rand('float32', (4, 6)), rand('float32', (4, 6)) - 1, rand('float32', (6,)) + 1],
    torch.clamp)

# ---- reductions ----
def tg_acc(dt):  # sums accumulate in at least (u)int32 / float32; narrow floats are returned as themselves
  return {'bool': 'int32', 'int8': 'int32', 'int16': 'int32', 'uint8': 'uint32', 'float16': 'float16'}.get(dt, dt)
AXES = [None, 0, -1, [0, 2], 1]
for name in ['sum', 'prod', 'max', 'min', 'mean', 'var', 'std', 'logsumexp', 'any', 'all']:
  dts = {'sum': ALL, 'prod': FLOATS + ['int32', 'int64'], 'max': ALL, 'min': ALL, 'mean': FLOATS + ['int32', 'uint8'],
         'var': FLOATS, 'std': ['float32', 'float64'], 'logsumexp': ['float32', 'float64', 'float16'],
         'any': ['bool', 'float32', 'int32'], 'all': ['bool', 'float32', 'int32']}[name]
  for dt in dts:
    for ai, axis in enumerate(AXES):
      for keep in ([False, True] if ai in (1, 3) else [False]):
        if name in ('logsumexp',) and axis is None: continue
        x = rand(dt, S, 'small' if name == 'prod' else 'any')
        if dt == 'bool' and name in ('any', 'all'):  # skewed, so some rows are all true or all false
          x = x | rand('bool') | rand('bool') if name == 'all' else x & rand('bool') & rand('bool')
        dim = tuple(axis) if isinstance(axis, list) else axis
        def fn(x, name=name, dim=dim, keep=keep, dt=dt):
          # PyTorch's CPU half reductions round partial sums to half: reduce in float32, round once
          xx = x.float() if (name == 'mean' and dt in INTS) or dt == 'float16' else x
          if name in ('max', 'min', 'prod'):  # one axis at a time: these take a single dim
            if dim is None: return getattr(xx, name)()
            r = xx
            for d in sorted([dim % 3] if isinstance(dim, int) else dim, reverse=True):
              r = getattr(r, name)(d, keepdim=keep)
              r = r if name == 'prod' else r.values
            return r
          if name in ('any', 'all'):
            if dim is None: return getattr(xx, name)()
            r = xx
            for d in sorted([dim % 3] if isinstance(dim, int) else dim, reverse=True):
              r = getattr(r, name)(d, keepdim=keep)
            return r.bool()
          if name in ('var', 'std'): return getattr(xx, name)() if dim is None else getattr(xx, name)(dim, keepdim=keep)
          if dim is None: return getattr(torch, name)(xx)
          return getattr(torch, name)(xx, dim, keepdim=keep)
        out = {'sum': tg_acc(dt), 'prod': dt, 'mean': 'float32' if dt in INTS else None}.get(name)
        out = 'float16' if dt == 'float16' and name not in ('any', 'all') else out
        add(f'{name}/{dt}/axis{ai}' + ('/keep' if keep else ''), name, [x], fn,
            {'keepdim': keep} | ({'axis': axis} if axis is not None else {}), out_dtype=out)
  add(f'{name}/permuted', name, [In(rand('float32', (7, 3, 5)), permute=(1, 2, 0))],
      lambda x, name=name: getattr(torch, name)(x, 1) if name not in ('max', 'min')
      else getattr(torch, name)(x, 1).values,
      {'axis': 1, 'keepdim': False}, out_dtype='bool' if name in ('any', 'all') else None)
add('var/correction0', 'var', [rand('float32')], lambda x: x.var(1, unbiased=False), {'axis': 1, 'correction': 0.0})
add('std/correction0', 'std', [rand('float32')], lambda x: x.std(unbiased=False), {'correction': 0.0})
add('sum/dtype_int64', 'sum', [rand('int8')], lambda x: x.sum(2), {'axis': 2, 'dtype': 'int64'})
add('sum/dtype_f32_of_f16', 'sum', [rand('float16')], lambda x: x.float().sum(0), {'axis': 0, 'dtype': 'float32'})
add('sum/specials', 'sum', [specials('float32')], lambda x: x.sum(1), {'axis': 1})
add('max/specials', 'max', [specials('float32')[:, 1:]], lambda x: x.max(0).values, {'axis': 0})
add('sum/empty_axis', 'sum', [rand('float32', (3, 0))], lambda x: x.sum(1), {'axis': 1})
add('max/scalar', 'max', [rand('float32', ())], lambda x: x.max())
add('logsumexp/large', 'logsumexp', [torch.tensor([[1000.0, 1000.0], [-1000.0, -999.0]])],
    lambda x: torch.logsumexp(x, 1), {'axis': 1})
for name in ['argmax', 'argmin']:
  for dt in ['float32', 'int32', 'uint8', 'float16', 'int8', 'bool']:
    for axis, keep in [(None, False), (0, False), (-1, True), (1, False)]:
      x = rand(dt, S, 'small')  # small ranges make ties: the first extreme wins
      add(f'{name}/{dt}/{axis}/{keep}', name, [x], lambda x, n=name, a=axis, k=keep:
          getattr(torch, n)(x.to(torch.uint8) if x.dtype == torch.bool else x, a, keepdim=k),
          {'keepdim': keep} | ({'axis': axis} if axis is not None else {}), out_dtype='int32')
  add(f'{name}/permuted', name, [In(rand('float32', (7, 3, 5)), permute=(2, 0, 1))],
      lambda x, n=name: getattr(torch, n)(x, 2), {'axis': 2}, out_dtype='int32')
for dt in ['float32', 'int32', 'float16', 'int8', 'bool', 'float64']:
  for axis in [0, 1, -1]:
    add(f'cumsum/{dt}/{axis}', 'cumsum', [rand(dt, S, 'small')], lambda x, a=axis: torch.cumsum(x, a),
        {'axis': axis}, out_dtype=tg_acc(dt))
add('cumsum/1d', 'cumsum', [rand('float32', (33,))], lambda x: torch.cumsum(x, 0), {'axis': 0})

# special values through reductions and the softmax family: NaN wins max/argmax, -inf entries are masked
nan_row = torch.tensor([[1.0, float('nan'), 3.0], [2.0, -1.0, 0.5], [float('-inf'), 4.0, float('inf')]])
for name, fn in [('max', lambda x: x.max(1).values), ('min', lambda x: x.min(1).values), ('sum', lambda x: x.sum(1)),
                 ('mean', lambda x: x.mean(1)), ('prod', lambda x: x.prod(1))]:
  add(f'{name}/nan_inf', name, [nan_row], fn, {'axis': 1})
add('argmax/nan', 'argmax', [nan_row], lambda x: x.argmax(1), {'axis': 1}, out_dtype='int32')
add('argmin/nan', 'argmin', [nan_row], lambda x: x.argmin(1), {'axis': 1}, out_dtype='int32')
add('any/nan', 'any', [torch.tensor([[float('nan'), 0.0], [0.0, -0.0]])], lambda x: x.any(1), {'axis': 1})
masked = torch.tensor([[0.5, float('-inf'), 2.0, float('-inf')], [float('-inf'), 1.0, float('-inf'), -3.0],
                       [float('-inf')] * 4])
add('logsumexp/masked', 'logsumexp', [masked], lambda x: torch.logsumexp(x, 1), {'axis': 1})
add('softmax/masked', 'softmax', [masked[:2]], lambda x: torch.softmax(x, 1), {'axis': 1})
add('log_softmax/masked', 'log_softmax', [masked[:2]], lambda x: torch.log_softmax(x, 1), {'axis': 1})
add('softmax/masked_row', 'softmax', [masked], lambda x: torch.softmax(x, 1), {'axis': 1})
add('mean/empty', 'mean', [rand('float32', (2, 0))], lambda x: x.mean(1), {'axis': 1})
add('where/nan', 'where', [rand('bool', (4, 9)), specials('float32'), specials('float32').flip(1)], torch.where)
# integers wrap as two's complement
add('add/int8_wrap', 'add', [torch.tensor([120, -120, 127, -128], dtype=torch.int8),
                             torch.tensor([10, -10, 1, -1], dtype=torch.int8)], torch.add)
add('mul/int8_wrap', 'mul', [torch.tensor([16, -16, 100, 7], dtype=torch.int8),
                             torch.tensor([16, 9, 3, 7], dtype=torch.int8)], torch.mul)
add('sub/uint8_wrap', 'sub', [torch.tensor([0, 5, 200], dtype=torch.uint8),
                              torch.tensor([1, 10, 255], dtype=torch.uint8)],
    torch.sub)
add('mul/int32_wrap', 'mul', [torch.tensor([65536, 2147483647, -2147483647], dtype=torch.int32),
                              torch.tensor([65536, 2, 3], dtype=torch.int32)], torch.mul)
add('neg/int8_min', 'neg', [torch.tensor([-128, 127, 0], dtype=torch.int8)], torch.neg)
add('pow/specials_float', 'pow', [torch.tensor([-2.0, -2.0, 0.0, 0.0, -8.0, 2.0, float('inf'), 1.0, -0.5]),
                                  torch.tensor([3.0, 2.0, 0.0, -1.0, 1 / 3, -2.0, -1.0, float('nan'), 0.5])], torch.pow)
add('pow/int_negative_base', 'pow', [torch.tensor([-3, -2, 0, 5, -1], dtype=torch.int32),
                                     torch.tensor([3, 4, 0, 2, 7], dtype=torch.int32)], torch.pow)
# bigger odd shapes: several threads and vector widths on compiled devices
big = rand('float32', (19, 263))
add('sum/big_rows', 'sum', [big], lambda x: x.sum(1), {'axis': 1})
add('sum/big_cols', 'sum', [big], lambda x: x.sum(0), {'axis': 0})
add('max/big', 'max', [big], lambda x: x.max(0).values, {'axis': 0})
add('exp/big', 'exp', [big], torch.exp)
add('add/big_broadcast', 'add', [big, rand('float32', (263,))], torch.add)
add('matmul/big', 'matmul', [rand('float32', (65, 130)), rand('float32', (130, 33))], torch.matmul)
add('matmul/big_int', 'matmul', [rand('int32', (33, 70), 'small'), rand('int32', (70, 17), 'small')], torch.matmul)
add('cumsum/long', 'cumsum', [rand('float32', (3, 301))], lambda x: torch.cumsum(x, 1), {'axis': 1})
add('argmax/big', 'argmax', [big], lambda x: x.argmax(1), {'axis': 1}, out_dtype='int32')
add('softmax/big', 'softmax', [big], lambda x: torch.softmax(x, 1), {'axis': 1})

# ---- movement ----
for dt in ['float32', 'int8', 'bool', 'float16']:
  x = rand(dt)
  add(f'reshape/{dt}', 'reshape', [x], lambda x: x.reshape(7, -1), {'shape': [7, -1]})
add('reshape/to_scalar', 'reshape', [rand('float32', (1, 1))], lambda x: x.reshape(()), {'shape': []})
add('reshape/permuted', 'reshape', [In(rand('float32'), permute=(2, 0, 1))], lambda x: x.reshape(-1, 5),
    {'shape': [-1, 5]})
add('reshape/strided', 'reshape', [In(rand('int32', (6, 8)), slices=[(None, None, 2), (1, 7)])],
    lambda x: x.reshape(2, 9), {'shape': [2, 9]})
for perm in [(2, 0, 1), (1, 0, 2), (0, 2, 1), (-1, 0, 1)]:
  add(f'permute/{perm}', 'permute', [rand('float32')], lambda x, p=perm: x.permute(*p), {'order': list(perm)})
add('permute/bool', 'permute', [rand('bool')], lambda x: x.permute(2, 1, 0), {'order': [2, 1, 0]})
for shape, new in [((3, 1, 7), (3, 5, 7)), ((1,), (4, 2, 6)), ((5, 1), (2, 5, -1)), ((), (2, 3))]:
  add(f'expand/{shape}->{new}', 'expand', [rand('float32', shape)], lambda x, n=new: x.expand(*n), {'shape': list(new)})
add('expand/int8', 'expand', [rand('int8', (1, 4))], lambda x: x.expand(3, 4), {'shape': [3, 4]})
PADS = [[(1, 2), (0, 0), (3, 1)], [(0, 0), (2, 2), (0, 0)], [(2, 1), (1, 3), (0, 2)], [(-1, 1), (0, 0), (1, -2)]]
NPMODE = {'constant': 'constant', 'reflect': 'reflect', 'replicate': 'edge'}
for mode in NPMODE:
  for pi, pads in enumerate(PADS):
    for dt in (['float32', 'int32', 'bool', 'float16'] if pi == 0 else ['float32']):
      def fn(x, pads=pads, mode=mode):
        a = x.numpy()
        crop = tuple(slice(max(-b, 0), a.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(pads))
        grow = [(max(b, 0), max(e, 0)) for b, e in pads]
        if mode == 'constant': return torch.from_numpy(np.pad(a[crop], grow, mode='constant'))
        return torch.from_numpy(np.pad(a, grow, mode=NPMODE[mode])[tuple(
            slice(max(-b, 0), a.shape[i] + max(b, 0) + max(e, 0) - max(-e, 0)) for i, (b, e) in enumerate(pads))])
      add(f'pad/{mode}/{pi}/{dt}', 'pad', [rand(dt)], fn, {'pads': pads, 'mode': mode})
add('pad/value', 'pad', [rand('float32', (2, 3))], lambda x: F.pad(x, (1, 1, 2, 0), value=-1.5),
    {'pads': [[2, 0], [1, 1]], 'mode': 'constant', 'value': -1.5})
add('pad/circular', 'pad', [rand('float32', (3, 5))], lambda x: F.pad(x[None], (2, 3), mode='circular')[0],
    {'pads': [[0, 0], [2, 3]], 'mode': 'circular'})
add('pad/permuted', 'pad', [In(rand('float32', (5, 4)), permute=(1, 0))], lambda x: F.pad(x, (1, 2, 0, 1)),
    {'pads': [[0, 1], [1, 2]], 'mode': 'constant'})
for i, b in enumerate([[(0, 2), (1, 4), (3, 7)], [(1, 2), (0, 5), (0, 0)], [(0, 3), (0, 5), (0, 7)]]):
  add(f'shrink/{i}', 'shrink', [rand('float32')], lambda x, b=b: x[tuple(slice(s, e) for s, e in b)], {'bounds': b})
for axes in [[0], [1, 2], [-1], [0, 1, 2]]:
  add(f'flip/{axes}', 'flip', [rand('float32')], lambda x, a=axes: torch.flip(x, a), {'axes': axes})
add('flip/int8', 'flip', [In(rand('int8'), permute=(1, 0, 2))], lambda x: torch.flip(x, [0]), {'axes': [0]})
for d0, d1 in [(0, 1), (-1, 0), (1, 2)]:
  add(f'transpose/{d0}/{d1}', 'transpose', [rand('float32')], lambda x, a=d0, b=d1: x.transpose(a, b),
      {'dim0': d0, 'dim1': d1})
for s, e in [(0, -1), (1, 2), (0, 1), (2, 2)]:
  add(f'flatten/{s}/{e}', 'flatten', [rand('float32', (2, 3, 4, 5))], lambda x, s=s, e=e: x.flatten(s, e),
      {'start': s, 'end': e})
add('flatten/scalar', 'flatten', [rand('float32', ())], lambda x: x.flatten(), {'start': 0, 'end': -1})
for d, sizes in [(1, [5, 1]), (-1, [7, 1, 1]), (0, [1, 3]), (2, [-1, 7])]:
  add(f'unflatten/{d}/{sizes}', 'unflatten', [rand('float32')], lambda x, d=d, s=sizes: x.unflatten(d, s),
      {'dim': d, 'sizes': sizes})
for d in [None, 0, 2, -1]:
  add(f'squeeze/{d}', 'squeeze', [rand('float32', (1, 3, 1, 5))], 
      lambda x, d=d: x.squeeze() if d is None else x.squeeze(d),
      {} if d is None else {'dim': d})
for d in [0, 1, 3, -1, -4]:
  add(f'unsqueeze/{d}', 'unsqueeze', [rand('float32', (3, 5, 7))], lambda x, d=d: x.unsqueeze(d), {'dim': d})
for reps in [[2, 1, 3], [1, 2, 2, 1], [3, 1, 1]]:
  add(f'repeat/{reps}', 'repeat', [rand('int32')], lambda x, r=reps: x.repeat(*r), {'repeats': reps})
add('repeat/bool', 'repeat', [rand('bool', (2, 3))], lambda x: x.repeat(2, 2), {'repeats': [2, 2]})
for d in [0, 1, -1]:
  shapes = [list(S) for _ in range(3)]
  for k, n in enumerate([2, 1, 4]): shapes[k][d] = n
  add(f'cat/{d}', 'cat', [rand('float32', tuple(s)) for s in shapes], lambda *xs, d=d: torch.cat(xs, d), {'dim': d})
  add(f'stack/{d}', 'stack', [rand('float32', S) for _ in range(3)], lambda *xs, d=d: torch.stack(xs, d), {'dim': d})
add('cat/promote', 'cat', [rand('int32', (2, 3)), rand('float16', (1, 3))], lambda *xs: torch.cat(xs, 0), {'dim': 0})
add('cat/bool', 'cat', [rand('bool', (2, 3)), rand('bool', (2, 2))], lambda *xs: torch.cat(xs, 1), {'dim': 1})
add('cat/views', 'cat', [In(rand('float32', (3, 2)), permute=(1, 0)),
                        In(rand('float32', (4, 6)), slices=[(None, None, 2), (None, None, 2)])],
    lambda *xs: torch.cat(xs, 0), {'dim': 0})
add('stack/int8', 'stack', [rand('int8', (4,)), rand('int8', (4,))], lambda *xs: torch.stack(xs, 1), {'dim': 1})
for size, d in [(2, 1), (3, -1), (5, 0), (10, 1)]:
  add(f'split/{size}/{d}', 'split', [rand('float32')], lambda x, s=size, d=d: x.split(s, d), {'size': size, 'dim': d})
add('split/sizes', 'split', [rand('float32')], lambda x: x.split([1, 4, 2], 2), {'sizes': [1, 4, 2], 'dim': 2})
for n, d in [(2, 1), (3, -1), (4, 0), (7, 2)]:
  add(f'chunk/{n}/{d}', 'chunk', [rand('float32')], lambda x, n=n, d=d: x.chunk(n, d), {'chunks': n, 'dim': d})
for dt in ['float32', 'int8', 'bool']:
  add(f'contiguous/{dt}', 'contiguous', [In(rand(dt, (7, 3, 5)), permute=(2, 0, 1))], lambda x: x.contiguous())
add('contiguous/strided', 'contiguous', [In(rand('float32', (6, 9)), slices=[(1, None, 2), (None, None, -3)])],
    lambda x: x.contiguous())

# ---- indexing: ints, slices (any step), None, ..., integer tensors ----
IDX = {  # name: index list; {"t": k} is input k+1 (an integer tensor)
  'int': [1], 'neg_int': [-1, 2], 'slice': [[1, 3, None]], 'step': [[None, None, 2], [1, None, 3]],
  'neg_step': [[None, None, -1], [4, 0, -2]], 'neg_bounds': [[-2, None, None], [None, -1, None], -3],
  'none': [None, 0, None], 'ellipsis': ['...', 1], 'ellipsis_mid': [0, '...', [None, None, -3]],
  'clipped': [[-10, 10, None], [3, 100, 2]], 'empty': [[2, 1, None]],
  'tensor': [{'t': 0}], 'tensor_2d': [{'t': 0}, {'t': 1}], 'tensor_apart': [{'t': 0}, [None], {'t': 1}],
  'tensor_neg': [[None], {'t': 0}], 'tensor_slice': [[None, None, 2], {'t': 0}, None],
}
IDX_T = {'tensor': [rand('int32', (2, 2), 'shift') - 1],
         'tensor_2d': [torch.tensor([0, 2, -1]), torch.tensor([[1], [4]])],
         'tensor_apart': [torch.tensor([2, 0]), torch.tensor([6, -7])], 'tensor_neg': [torch.tensor([-5, 4, 0, -1])],
         'tensor_slice': [torch.tensor([[0, 1], [4, 4]], dtype=torch.int64)]}
def np_index(spec, ts):
  out = []
  for s in spec:
    if s is None: out.append(None)
    elif s == '...': out.append(Ellipsis)
    elif isinstance(s, dict): out.append(ts[s['t']].numpy())
    elif isinstance(s, list): out.append(slice(*s))
    else: out.append(s)
  return tuple(out)
for name, spec in IDX.items():
  ts = IDX_T.get(name, [])
  for dt in (['float32', 'int8', 'bool'] if name in ('step', 'tensor', 'neg_step') else ['float32']):
    add(f'index/{name}/{dt}', 'index', [rand(dt)] + ts,
        lambda x, *t, s=spec: torch.from_numpy(np.ascontiguousarray(x.numpy()[np_index(s, t)])), {'index': spec})
add('index/permuted', 'index', [In(rand('float32', (7, 5, 3)), permute=(2, 1, 0))],
    lambda x: x[1:, ::2], {'index': [[1, None], [None, None, 2]]})
for dt in ['float32', 'int32', 'bool', 'float16']:
  for d in [0, 1, -1]:
    x = rand(dt, S)
    ishape = list(S); ishape[d] = 4; ishape[(d + 1) % 3] -= 1
    idx = torch.tensor(rng.integers(0, S[d], ishape))
    add(f'gather/{dt}/{d}', 'gather', [x, idx], lambda x, i, d=d: torch.gather(x, d, i), {'dim': d})
for name, spec, vshape in [('slice', [[1, 3, None]], (2, 5, 7)), ('int', [0, [None, None, 2]], (3, 7)),
                           ('step', [[None], [None], [None, None, 3]], (1, 5, 3)), ('scalar', [2, 1, 1], ())]:
  for dt in ['float32', 'int32']:
    def fn(x, v, s=spec):
      y = x.clone().numpy(); y[np_index(s, [])] = v.numpy(); return torch.from_numpy(y)
    add(f'setitem/{name}/{dt}', 'setitem', [rand(dt), rand(dt, vshape)], fn, {'index': spec})
add('assign/full', 'assign', [rand('float32', (4, 3)), rand('float32', (4, 3))], lambda x, v: x.clone().copy_(v))
add('assign/broadcast', 'assign', [rand('int32', (4, 3)), rand('int32', (3,))], lambda x, v: x.clone().copy_(v))
add('one_hot/5', 'one_hot', [rand('int32', (2, 3), 'shift')], lambda x: F.one_hot(x.long(), 5), {'classes': 5},
    out_dtype='int32')

# ---- linear algebra ----
MM = [((3, 5), (5, 4)), ((7,), (7,)), ((7,), (7, 3)), ((4, 7), (7,)), ((2, 3, 5), (5, 4)), ((2, 1, 3, 5), (4, 5, 2)),
      ((1, 6), (6, 1))]
for i, (sa, sb) in enumerate(MM):
  add(f'matmul/{i}', 'matmul', [rand('float32', sa), rand('float32', sb)], torch.matmul)
for dt in ['int32', 'float16', 'int8', 'float64']:
  add(f'matmul/{dt}', 'matmul', [rand(dt, (4, 6), 'small'), rand(dt, (6, 3), 'small')], torch.matmul,
      out_dtype=dt)
add('matmul/transposed', 'matmul',
    [In(rand('float32', (5, 3)), permute=(1, 0)), In(rand('float32', (4, 5)), permute=(1, 0))],
    torch.matmul)
# Big enough that a CPU device packs w into strips (m >= 32, n a multiple of the strip, m*n*k >= 2^21):
# plain, batched on both sides, and w a transposed view.
add('matmul/packed', 'matmul', [rand('float32', (128, 256)), rand('float32', (256, 64))], torch.matmul)
add('matmul/packed_batched', 'matmul', [rand('float32', (2, 64, 128)), rand('float32', (2, 128, 128))],
    torch.matmul)
add('matmul/packed_transposed', 'matmul',
    [rand('float32', (64, 256)), In(rand('float32', (128, 256)), permute=(1, 0))], torch.matmul)
add('matmul/mixed', 'matmul', [rand('int32', (3, 4)), rand('float32', (4, 2))], lambda a, b: a.float() @ b)
add('dot/vec', 'dot', [rand('float32', (9,)), rand('float32', (9,))], torch.dot)
add('dot/mat', 'dot', [rand('float32', (2, 9)), rand('float32', (9, 3))], torch.matmul)
for i, (f, shapes) in enumerate([('ij,jk->ik', [(3, 4), (4, 5)]), ('ij->ji', [(3, 4)]), ('ii->i', [(4, 4)]),
                                 ('ii', [(5, 5)]), ('bij,bjk->bik', [(2, 3, 4), (2, 4, 5)]), ('i,j->ij', [(3,), (4,)]),
                                 ('ijk->', [(2, 3, 4)]), ('ij,ij->i', [(3, 5), (3, 5)]),
                                 ('ab,bc,cd->ad', [(2, 3), (3, 4), (4, 2)]),
                                 ('ij,jk', [(2, 3), (3, 4)]), ('iji->j', [(3, 4, 3)])]):
  add(f'einsum/{i}', 'einsum', [rand('float32', s) for s in shapes], lambda *xs, f=f: torch.einsum(f, *xs),
      {'formula': f})
add('linear/bias', 'linear', [rand('float32', (4, 6)), rand('float32', (6, 3)), rand('float32', (3,))],
    lambda x, w, b: x @ w + b)
add('linear/nobias', 'linear', [rand('float32', (2, 4, 6)), rand('float32', (6, 3))], lambda x, w: x @ w)

# ---- nn functional ----
for dt in ['float32', 'float16', 'float64']:
  for axis in [-1, 0, 1]:
    add(f'softmax/{dt}/{axis}', 'softmax', [rand(dt)], lambda x, a=axis: torch.softmax(x, a), {'axis': axis})
    add(f'log_softmax/{dt}/{axis}', 'log_softmax', [rand(dt)], lambda x, a=axis: torch.log_softmax(x, a),
        {'axis': axis})
add('softmax/large', 'softmax', [torch.tensor([[1000.0, 999.0, -1000.0], [0.0, 0.0, 0.0]])],
    lambda x: torch.softmax(x, -1), {'axis': -1})
add('log_softmax/large', 'log_softmax', [torch.tensor([[1000.0, 999.0, -1000.0], [-50.0, 50.0, 0.0]])],
    lambda x: torch.log_softmax(x, -1), {'axis': -1})
add('softmax/permuted', 'softmax', [In(rand('float32', (7, 3, 5)), permute=(1, 2, 0))], lambda x: torch.softmax(x, 1),
    {'axis': 1})
for dt in ['float32', 'float16']:
  add(f'layernorm/{dt}', 'layernorm', [rand(dt)], lambda x: F.layer_norm(x, (7,)), {'axis': [-1]})
add('layernorm/two_axes', 'layernorm', [rand('float32')], lambda x: F.layer_norm(x, (5, 7), eps=1e-3),
    {'axis': [1, 2], 'eps': 1e-3})
logits, labels = rand('float32', (6, 5)), torch.tensor(rng.integers(0, 5, 6), dtype=torch.int32)
for red in ['mean', 'sum', 'none']:
  for ls in [0.0, 0.1]:
    add(f'cross_entropy/idx/{red}/{ls}', 'cross_entropy', [logits, labels],
        lambda x, y, r=red, ls=ls: F.cross_entropy(x, y.long(), reduction=r, label_smoothing=ls),
        {'reduction': red, 'smoothing': ls})
    add(f'cross_entropy/prob/{red}/{ls}', 'cross_entropy', [logits, torch.softmax(rand('float32', (6, 5)), -1)],
        lambda x, y, r=red, ls=ls: F.cross_entropy(x, y, reduction=r, label_smoothing=ls),
        {'reduction': red, 'smoothing': ls})
add('cross_entropy/spatial', 'cross_entropy', [rand('float32', (2, 4, 3)), torch.tensor(rng.integers(0, 4, (2, 3)))],
    lambda x, y: F.cross_entropy(x, y), {'reduction': 'mean', 'smoothing': 0.0})
add('cross_entropy/1d', 'cross_entropy', [rand('float32', (5,)), torch.tensor(2)], lambda x, y: F.cross_entropy(x, y),
    {'reduction': 'mean', 'smoothing': 0.0})
labels_ign = labels.clone(); labels_ign[[1, 4]] = -1
for red in ['mean', 'sum', 'none']:
  for ls in [0.0, 0.2]:
    add(f'sparse_ce/{red}/{ls}', 'sparse_categorical_crossentropy', [logits, labels_ign],
        lambda x, y, r=red, ls=ls: F.cross_entropy(x, y.long(), ignore_index=-1, reduction=r, label_smoothing=ls),
        {'reduction': red, 'smoothing': ls, 'ignore_index': -1})
p, t = rand('float32', (4, 5), 'unit'), rand('float32', (4, 5), 'unit')
for red in ['mean', 'sum', 'none']:
  add(f'bce/{red}', 'binary_crossentropy', [p, t], lambda x, y, r=red: F.binary_cross_entropy(x, y, reduction=r),
      {'reduction': red})
  add(f'bce_logits/{red}', 'binary_crossentropy_logits', [rand('float32', (4, 5)), t],
      lambda x, y, r=red: F.binary_cross_entropy_with_logits(x, y, reduction=r), {'reduction': red})

# ---- composed math and activations ----
def quick_gelu(x): return x * torch.sigmoid(1.702 * x)
MATH = {  # name: (torch fn, dtypes, input kind); asin/acos/atan/erf are float32-accurate polynomials
  'asin': (torch.asin, ['float32', 'float16'], 'small'), 'acos': (torch.acos, ['float32', 'float16'], 'small'),
  'atan': (torch.atan, ['float32', 'float16', 'int32'], 'any'), 'sinh': (torch.sinh, FLOATS + ['int32'], 'small'),
  'cosh': (torch.cosh, FLOATS, 'any'), 'asinh': (torch.asinh, FLOATS + ['int8'], 'any'),
  'acosh': (torch.acosh, FLOATS, 'ge1'), 'atanh': (torch.atanh, FLOATS, 'small'),
  'erf': (torch.erf, ['float32', 'float16', 'int32'], 'any'), 'log10': (torch.log10, FLOATS + ['int32'], 'pos'),
  'gelu_exact': (F.gelu, ['float32', 'float16'], 'any'), 'elu': (F.elu, FLOATS, 'any'),
  'celu': (F.celu, FLOATS, 'any'), 'selu': (F.selu, FLOATS, 'any'), 'mish': (F.mish, FLOATS, 'any'),
  'hardsigmoid': (F.hardsigmoid, FLOATS, 'any'), 'hardswish': (F.hardswish, FLOATS, 'any'),
  'hardtanh': (F.hardtanh, FLOATS, 'any'), 'relu6': (lambda x: F.relu6(x * 3), FLOATS, 'any'),
  'softsign': (F.softsign, FLOATS, 'any'), 'quick_gelu': (quick_gelu, FLOATS, 'any'),
}
for name, (fn, dts, kind) in MATH.items():
  for dt in dts:
    add(f'{name}/{dt}', name, [rand(dt, S, kind)], fn)
  add(f'{name}/strided', name, [In(rand(dts[0], (7, 3, 5), kind), slices=[(None, None, 2), (1, 3), (None, None, -2)])],
      fn)
add('atan/large', 'atan', [torch.tensor([1e4, -1e4, 1e30, -50.0, 1.0, -1.0, 0.0, 1e-6])], torch.atan)
add('erf/tails', 'erf', [torch.tensor([-6.0, -3.5, -1e-4, 0.0, 1e-4, 0.5, 2.5, 6.0])], torch.erf)
add('asin/edges', 'asin', [torch.tensor([-1.0, 1.0, 0.999, -0.999, 0.0, 1e-5])], torch.asin)
add('hardtanh/bounds', 'hardtanh', [rand('float32')], lambda x: F.hardtanh(x, -0.5, 2.0), {'min': -0.5, 'max': 2.0})
add('elu/alpha', 'elu', [rand('float32')], lambda x: F.elu(x, 0.3), {'alpha': 0.3})
add('celu/alpha', 'celu', [rand('float32')], lambda x: F.celu(x, 2.5), {'alpha': 2.5})
for dt in FLOATS:
  for d in [-1, 0, 1]:
    add(f'softmin/{dt}/{d}', 'softmin', [rand(dt)], lambda x, d=d: F.softmin(x, d), {'axis': d})
for dt in FLOATS + ['int32']:
  add(f'copysign/{dt}', 'copysign', [rand(dt), rand(dt)], torch.copysign)
add('copysign/broadcast', 'copysign', [rand('float32', (3, 1, 7)), rand('float32', (5, 1))], torch.copysign)
add('copysign/int8_uint8', 'copysign', [rand('int8', (2, 9)), rand('uint8', (2, 9))], torch.copysign)
add('copysign/specials', 'copysign', [specials('float32'), specials('float32').flip(0)], torch.copysign)
add('copysign_scalar/neg', 'copysign_scalar', [rand('float32', (4, 5))], lambda x: torch.copysign(x, -2.0),
    {'scalar': -2.0})
for dt in FLOATS:
  add(f'lerp/{dt}', 'lerp', [rand(dt), rand(dt), rand(dt, S, 'small') * 1.6], torch.lerp)
add('lerp/broadcast', 'lerp', [rand('float32', (3, 1, 7)), rand('float32', (5, 7)), rand('float32', (7,), 'unit')],
    torch.lerp)
for w in [0.25, 0.75, 1.0]:
  add(f'lerp_scalar/{w}', 'lerp_scalar', [rand('float32'), rand('float32')], lambda a, b, w=w: torch.lerp(a, b, w),
      {'weight': w})

# masks
for dt, v in [('float32', 2.5), ('int32', 7), ('bool', True), ('float16', -1.5), ('int8', -3)]:
  add(f'masked_fill/{dt}', 'masked_fill', [rand(dt), rand('bool')], lambda x, m, v=v: x.masked_fill(m, v), {'value': v})
add('masked_fill/broadcast', 'masked_fill', [rand('float32'), rand('bool', (5, 1))],
    lambda x, m: x.masked_fill(m, -2.0), {'value': -2.0})
add('masked_fill/tensor_value', 'masked_fill', [rand('float32', (4, 6)), rand('bool', (4, 6)), rand('float32', ())],
    lambda x, m, v: x.masked_fill(m, v))
for name in ['tril', 'triu']:
  for dt in ['float32', 'int8', 'bool']:
    for k in [0, 1, -2, 9]:
      add(f'{name}/{dt}/{k}', name, [rand(dt)], lambda x, n=name, k=k: getattr(torch, n)(x, k), {'diagonal': k})
  add(f'{name}/wide', name, [rand('float32', (4, 9))], lambda x, n=name: getattr(torch, n)(x, 2), {'diagonal': 2})
  add(f'{name}/tall', name, [In(rand('float32', (4, 9)), permute=(1, 0))], lambda x, n=name: getattr(torch, n)(x, -1),
      {'diagonal': -1})

# statistics
for name in ['std_mean', 'var_mean']:
  for dt in FLOATS:
    for axis, keep in [(None, False), (1, True), ([0, 2], False), (-1, False)]:
      dim = tuple(axis) if isinstance(axis, list) else axis
      add(f'{name}/{dt}/{axis}/{keep}', name, [rand(dt)],
          lambda x, n=name, d=dim, k=keep: getattr(torch, n)(x) if d is None else getattr(torch, n)(x, d, keepdim=k),
          {'keepdim': keep} | ({'axis': axis} if axis is not None else {}))
  add(f'{name}/correction0', name, [rand('float32')], lambda x, n=name: getattr(torch, n)(x, 1, unbiased=False),
      {'axis': 1, 'correction': 0.0})
near = specials('float32')
near_b = near.clone()
near_b.view(-1)[12:24] += torch.tensor([1e-7, 1e-5, 1e-3, -1e-6, 0.0, 2e-8, -3e-5, 1e-4, 0.5, -1e-9, 1e-6, 0.0])
for i, (rtol, atol, eq_nan) in enumerate([(1e-5, 1e-8, False), (1e-3, 0.0, False), (0.0, 1e-5, True), (0.1, 0.1, True)]):
  add(f'isclose/{i}', 'isclose', [near, near_b], lambda a, b, r=rtol, t=atol, e=eq_nan: torch.isclose(a, b, r, t, e),
      {'rtol': rtol, 'atol': atol, 'equal_nan': eq_nan})
add('isclose/int32', 'isclose', [rand('int32'), rand('int32', S, 'small')], lambda a, b: torch.isclose(a, b, 0.5, 1.0),
    {'rtol': 0.5, 'atol': 1.0, 'equal_nan': False})
add('isclose/broadcast', 'isclose', [rand('float32', (3, 1)), rand('float32', (4,))],
    lambda a, b: torch.isclose(a, b, 1.0, 1.0), {'rtol': 1.0, 'atol': 1.0, 'equal_nan': False})
a = rand('float32', (5, 7))
for i, (b, rtol, atol, eq_nan) in enumerate([(a + 1e-7, 1e-5, 1e-8, False), (a + 1e-3, 1e-5, 1e-8, False),
                                             (a * 1.001, 2e-3, 0.0, False), (near, 1e-5, 1e-8, True),
                                             (near, 1e-5, 1e-8, False)]):
  x = near if b is near else a
  add(f'allclose/{i}', 'allclose', [x, b], lambda x, b, r=rtol, t=atol, e=eq_nan: torch.tensor(torch.allclose(x, b, r, t, e)),
      {'rtol': rtol, 'atol': atol, 'equal_nan': eq_nan})
for dt in FLOATS:
  for p, d in [(2.0, 1), (1.0, -1), (3.0, 0), (float('inf'), 2)]:
    add(f'normalize/{dt}/{p}/{d}', 'normalize', [rand(dt)], lambda x, p=p, d=d: F.normalize(x, p, d),
        {'p': enc(p), 'dim': d})
zero_rows = rand('float32', (4, 5)); zero_rows[1] = 0
add('normalize/zero_row', 'normalize', [zero_rows], lambda x: F.normalize(x, 2.0, 1, 1e-3), {'p': 2.0, 'dim': 1, 'eps': 1e-3})

# scans
for dt in ['float32', 'float64', 'int32', 'float16']:
  for axis in [0, 1, -1]:
    add(f'cumprod/{dt}/{axis}', 'cumprod', [rand(dt, S, 'small')], lambda x, a=axis: torch.cumprod(x, a),
        {'axis': axis}, out_dtype=dt)
add('cumprod/bool', 'cumprod', [rand('bool', (3, 6))], lambda x: torch.cumprod(x, 1), {'axis': 1}, out_dtype='int32')
for name in ['cummax', 'cummin']:
  for dt in ['float32', 'int32', 'uint8', 'float16', 'int8']:
    for axis in [0, 1, -1]:
      # small ranges make ties: the index is the last position holding the running extreme
      add(f'{name}/{dt}/{axis}', name, [rand(dt, S, 'small' if dt in INTS else 'any')],
          lambda x, n=name, a=axis: getattr(torch, n)(x, a), {'axis': axis}, out_dtype=[None, 'int32'])
  add(f'{name}/bool', name, [rand('bool', (4, 9))], lambda x, n=name: getattr(torch, n)(x, 1), {'axis': 1},
      out_dtype=[None, 'int32'])
  add(f'{name}/permuted', name, [In(rand('float32', (7, 3, 5)), permute=(1, 2, 0))],
      lambda x, n=name: getattr(torch, n)(x, 2), {'axis': 2}, out_dtype=[None, 'int32'])
for dt in ['float32', 'float64']:
  for axis in [0, 1, -1]:
    add(f'logcumsumexp/{dt}/{axis}', 'logcumsumexp', [rand(dt)], lambda x, a=axis: torch.logcumsumexp(x, a),
        {'axis': axis})
add('logcumsumexp/large', 'logcumsumexp', [torch.tensor([[-1000.0, 0.0, 1000.0, 999.0, float('-inf')],
                                                         [float('-inf'), float('-inf'), 2.0, -50.0, 100.0]])],
    lambda x: torch.logcumsumexp(x, 1), {'axis': 1})

# shape helpers
for shifts, dims in [([2], [0]), ([-3], [2]), ([1, 4], [0, 2]), ([9], []), ([-22], [1]), ([0, 5], [-1, 1])]:
  add(f'roll/{shifts}/{dims}', 'roll', [rand('float32')],
      lambda x, s=shifts, d=dims: torch.roll(x, s, d) if d else torch.roll(x, s[0]), {'shifts': shifts, 'dims': dims})
add('roll/bool', 'roll', [rand('bool', (4, 6))], lambda x: torch.roll(x, 2, 1), {'shifts': [2], 'dims': [1]})
for k in [0, 2, -1]:
  add(f'diag/1d/{k}', 'diag', [rand('float32', (4,))], lambda x, k=k: torch.diag(x, k), {'diagonal': k})
  add(f'diag/2d/{k}', 'diag', [rand('int32', (4, 6))], lambda x, k=k: torch.diag(x, k), {'diagonal': k})
add('diag/bool', 'diag', [rand('bool', (5,))], lambda x: torch.diag(x), {'diagonal': 0})
for off, d1, d2 in [(0, 0, 1), (1, 0, 2), (-2, 2, 0), (3, -1, -2), (-4, 1, 2), (9, 0, 1)]:
  add(f'diagonal/{off}/{d1}/{d2}', 'diagonal', [rand('float32')], lambda x, o=off, a=d1, b=d2: torch.diagonal(x, o, a, b),
      {'offset': off, 'dim1': d1, 'dim2': d2})
for ix in ['ij', 'xy']:
  add(f'meshgrid/{ix}', 'meshgrid', [rand('float32', (3,)), rand('float32', (4,)), rand('float32', (2,))],
      lambda *xs, ix=ix: torch.meshgrid(*xs, indexing=ix), {'indexing': ix})
add('meshgrid/one', 'meshgrid', [rand('float32', (5,))], lambda x: torch.meshgrid(x, indexing='xy'), {'indexing': 'xy'})
for r, d in [(2, 0), (3, -1), (1, 1), (2, None), (0, 1)]:
  add(f'repeat_interleave/{r}/{d}', 'repeat_interleave', [rand('int32')],
      lambda x, r=r, d=d: torch.repeat_interleave(x, r, d), {'repeats': r} | ({'dim': d} if d is not None else {}))
for d, size, step in [(0, 2, 1), (1, 3, 2), (-1, 7, 1), (2, 2, 3), (1, 1, 5), (2, 3, 1)]:
  add(f'unfold/{d}/{size}/{step}', 'unfold', [rand('float32')], lambda x, d=d, s=size, t=step: x.unfold(d, s, t),
      {'dim': d, 'size': size, 'step': step})
add('unfold/int8', 'unfold', [rand('int8', (10,))], lambda x: x.unfold(0, 4, 3), {'dim': 0, 'size': 4, 'step': 3})
for target in [[4, 5, 9], [3, -1, 8], [3, 5, 7]]:
  add(f'pad_to/{target}', 'pad_to', [rand('float32')],
      lambda x, t=target: F.pad(x, [p for i in reversed(range(3)) for p in (0, (t[i] if t[i] != -1 else x.shape[i]) - x.shape[i])]),
      {'shape': target})
for target in [[2, 5, 4], [-1, 1, 7], [0, 5, 7]]:
  add(f'shrink_to/{target}', 'shrink_to', [rand('int32')],
      lambda x, t=target: x[tuple(slice(0, s if s != -1 else None) for s in t)], {'shape': target})

# scatter: unique targets per line (a permutation's first entries), so PyTorch's result is defined
for dt in ['float32', 'int32', 'bool', 'float16']:
  for d in [0, 1, -1]:
    x = rand(dt, S)
    ishape = list(S); ishape[d] = S[d] - 1; ishape[(d + 1) % 3] -= 1
    perm = torch.argsort(torch.tensor(rng.random(ishape[:d % 3] + [S[d]] + ishape[d % 3 + 1:])), dim=d)
    idx = perm.narrow(d, 0, ishape[d])
    add(f'scatter/{dt}/{d}', 'scatter', [x, idx, rand(dt, (4, 6, 8))], lambda x, i, s, d=d: torch.scatter(x, d, i, s),
        {'dim': d})
add('scatter/scalar', 'scatter', [rand('float32', (4, 5)), torch.tensor([[1, 0, 3], [2, 2, 0]])],
    lambda x, i: torch.scatter(x, 0, i, 9.5), {'dim': 0, 'value': 9.5})
for red in ['sum', 'prod', 'mean', 'amax', 'amin']:
  for inc in [True, False]:
    for dt in ['float32', 'int32']:
      kind = 'pos' if red == 'mean' and dt == 'int32' else 'small'
      idx = torch.tensor(rng.integers(0, 5, (2, 6, 7)))  # duplicates: several sources reduce into one element
      add(f'scatter_reduce/{red}/{inc}/{dt}', 'scatter_reduce', [rand(dt, S, kind), idx, rand(dt, (3, 6, 7), kind)],
          lambda x, i, s, r=red, inc=inc: x.scatter_reduce(1, i, s, r, include_self=inc),
          {'dim': 1, 'reduce': red, 'include_self': inc})

# sorting: stable, so tied values keep their order and indices match PyTorch's stable sort exactly
for dt in ['float32', 'int32', 'float16', 'uint8', 'int8']:
  for d, desc in [(-1, False), (0, True), (1, False), (1, True)]:
    add(f'sort/{dt}/{d}/{desc}', 'sort', [rand(dt, S, 'small' if dt in INTS else 'any')],
        lambda x, d=d, desc=desc: torch.sort(x, stable=True, dim=d, descending=desc), {'dim': d, 'descending': desc},
        out_dtype=[None, 'int32'])
    add(f'argsort/{dt}/{d}/{desc}', 'argsort', [rand(dt, S, 'small' if dt in INTS else 'any')],
        lambda x, d=d, desc=desc: torch.sort(x, stable=True, dim=d, descending=desc).indices, {'dim': d, 'descending': desc},
        out_dtype='int32')
for desc in [False, True]:
  add(f'sort/specials/{desc}', 'sort', [specials('float32')], lambda x, desc=desc: torch.sort(x, stable=True, dim=1, descending=desc),
      {'dim': 1, 'descending': desc}, out_dtype=[None, 'int32'])
add('sort/bool', 'sort', [rand('bool', (3, 8))], lambda x: torch.sort(x, stable=True, dim=1), {'dim': 1, 'descending': False},
    out_dtype=[None, 'int32'])
add('sort/long', 'sort', [rand('float32', (2, 100))], lambda x: torch.sort(x, 1), {'dim': 1, 'descending': False},
    out_dtype=[None, 'int32'])
for k, d, largest in [(3, -1, True), (1, 0, False), (5, 1, True), (0, 1, True), (7, 2, False)]:
  add(f'topk/{k}/{d}/{largest}', 'topk', [rand('float32')], lambda x, k=k, d=d, l=largest: torch.topk(x, k, d, l),
      {'k': k, 'dim': d, 'largest': largest}, out_dtype=[None, 'int32'])
# a sort of a lazy expression: every comparison must see the same rounding of each element
add('sort_fused/gumbel', 'sort_fused', [torch.tensor([1.0, 2.0, 3.0, 4.0]), rand('float32', (3000, 4), 'unit')],
    lambda w, u: torch.sort(torch.log(w) - torch.log(-torch.log(1 - u)), 1, descending=True), {},
    out_dtype=[None, 'int32'])
# with ties PyTorch's topk order among equal values is unspecified: compare only the values there
add('topk_values/ties', 'topk_values', [rand('int32', S, 'small')], lambda x: torch.topk(x, 4, 1).values,
    {'k': 4, 'dim': 1, 'largest': True})

# data-dependent sizes (PyTorch's int64 indices; ours are int32)
for name, x in [('int32', rand('int32', S, 'small')), ('bool', rand('bool', (4, 9))), ('1d', rand('int8', (17,), 'small')),
                ('specials', specials('float32')), ('none', torch.zeros(3, 4)), ('scalar', torch.tensor(2.0))]:
  add(f'nonzero/{name}', 'nonzero', [x], torch.nonzero, out_dtype='int32')
for dt in ['float32', 'int8', 'bool', 'float16']:
  add(f'masked_select/{dt}', 'masked_select', [rand(dt), rand('bool')], torch.masked_select)
add('masked_select/broadcast', 'masked_select', [rand('float32', (3, 1, 7)), rand('bool', (5, 1))], torch.masked_select)
add('masked_select/none', 'masked_select', [rand('float32', (3, 4)), torch.zeros(3, 4, dtype=torch.bool)],
    torch.masked_select)

# resampling and rearrange
for mode, shape, size, ac in [('nearest', (2, 3, 5, 7), [8, 4], False), ('nearest', (1, 2, 9), [4], False),
                              ('linear', (2, 3, 9), [5], False), ('linear', (2, 3, 4), [11], True),
                              ('bilinear', (2, 3, 5, 7), [8, 4], False), ('bilinear', (1, 2, 5, 7), [3, 13], True),
                              ('bicubic', (2, 3, 5, 7), [9, 4], False), ('bicubic', (1, 2, 6, 5), [4, 11], True),
                              ('trilinear', (1, 2, 3, 4, 5), [5, 3, 7], False)]:
  for dt in ['float32', 'float64'] if mode != 'nearest' else ['float32', 'float16']:
    add(f'interpolate/{mode}/{size}/{ac}/{dt}', 'interpolate', [rand(dt, shape)],
        lambda x, m=mode, s=size, ac=ac: F.interpolate(x, size=s, mode=m, align_corners=None if m == 'nearest' else ac),
        {'size': size, 'mode': mode, 'align_corners': ac})
add('interpolate/bilinear_f16', 'interpolate', [rand('float16', (1, 2, 4, 6))],
    lambda x: F.interpolate(x.float(), size=[7, 3], mode='bilinear').half(),
    {'size': [7, 3], 'mode': 'bilinear', 'align_corners': False})
pool_in = rand('float32', (2, 3, 6, 8))
for k, st, p, out in [(2, 2, 0, None), (2, 1, 0, None), (3, 2, 1, [6, 8])]:
  pooled, idx = F.max_pool2d(pool_in, k, st, p, return_indices=True)
  add(f'max_unpool2d/{k}/{st}/{p}', 'max_unpool2d', [pooled, idx],
      lambda x, i, k=k, st=st, p=p, out=out: F.max_unpool2d(x, i, k, st, p, output_size=out),
      {'kernel': k, 'stride': st, 'padding': p} | ({'output_size': out} if out else {}))
pooled, idx = F.max_pool2d(rand('float32', (3, 7, 7)), 2, 2, return_indices=True)
add('max_unpool2d/output_size', 'max_unpool2d', [pooled, idx], lambda x, i: F.max_unpool2d(x, i, 2, 2, output_size=[7, 7]),
    {'kernel': 2, 'stride': 2, 'padding': 0, 'output_size': [7, 7]})
# each pattern next to the same rearrangement written with PyTorch's reshape/permute
REARRANGE = [('b c h w -> b h w c', {}, (2, 3, 4, 5), lambda x: x.permute(0, 2, 3, 1)),
             ('b c (h w) -> b h w c', {'h': 2}, (2, 3, 6), lambda x: x.reshape(2, 3, 2, 3).permute(0, 2, 3, 1)),
             ('b (c h) w -> (b c) (h w)', {'c': 3}, (2, 6, 5), lambda x: x.reshape(6, 10)),
             ('... h w -> ... w h', {}, (2, 3, 4, 5), lambda x: x.transpose(-1, -2)),
             ('a b -> b 1 a', {}, (3, 4), lambda x: x.t().unsqueeze(1)),
             ('a 1 b -> (b a)', {}, (3, 1, 4), lambda x: x[:, 0, :].t().reshape(-1)),
             ('(a b c) -> c b a', {'a': 2, 'b': 3}, (24,), lambda x: x.reshape(2, 3, 4).permute(2, 1, 0)),
             ('b ... -> b (...)', {}, (2, 3, 4), lambda x: x.reshape(2, -1)),
             ('b ... -> (b ...)', {}, (2, 3, 4), lambda x: x.reshape(-1)),
             ('b h (w c) -> b (c w) h', {'c': 2}, (2, 3, 8), lambda x: x.reshape(2, 3, 4, 2).permute(0, 3, 2, 1).reshape(2, 8, 3))]
for i, (pattern, sizes, shape, fn) in enumerate(REARRANGE):
  add(f'rearrange/{i}', 'rearrange', [rand('float32', shape)], fn, {'pattern': pattern, 'sizes': sizes})
# QR
for i, shape in enumerate([(5, 3), (3, 5), (4, 4), (2, 4, 3), (1, 1)]):
  for dt in ['float32', 'float64'] if i < 2 else ['float32']:
    add(f'qr/{shape}/{dt}', 'qr', [rand(dt, shape)], torch.linalg.qr)

# SVD: singular vectors are unique up to sign, so both sides flip each pair (U column, Vh row) to make the
# largest-magnitude entry of the U column positive
def svd_signed(a):
  u, s, vh = torch.linalg.svd(a, full_matrices=False)
  sign = torch.sign(torch.gather(u, -2, u.abs().argmax(-2, keepdim=True)))
  return u * sign, s, vh * sign.transpose(-1, -2)
for i, shape in enumerate([(5, 3), (3, 5), (4, 4), (2, 4, 3), (1, 1), (6, 1)]):
  for dt in ['float32', 'float64'] if i < 2 else ['float32']:
    add(f'svd/{shape}/{dt}', 'svd', [rand(dt, shape)], svd_signed)
rank1 = torch.outer(torch.tensor([1.0, -2.0, 0.5, 3.0]), torch.tensor([2.0, 1.0, -1.0]))
add('svd/rank1_values', 'svd_values', [rank1], lambda a: torch.linalg.svdvals(a))

# ---- dtype ----
CASTS = [('float32', 'int32', 'any'), ('float32', 'int8', 'small'), ('float32', 'uint8', 'pos'),
         ('float32', 'bool', 'any'),
         ('float32', 'float16', 'any'), ('float32', 'float64', 'any'), ('float16', 'float32', 'any'),
         ('float16', 'int32', 'any'), ('int32', 'float32', 'any'), ('int32', 'float16', 'any'),
         ('int32', 'int8', 'any'),
         ('int32', 'uint8', 'pos'), ('int32', 'bool', 'small'), ('int32', 'int64', 'any'), ('int64', 'int32', 'any'),
         ('int8', 'uint8', 'pos'), ('uint8', 'int8', 'pos'), ('uint8', 'float32', 'any'), ('bool', 'float32', 'any'),
         ('bool', 'int32', 'any'), ('bool', 'float16', 'any'), ('float64', 'float32', 'any'), ('int8', 'int64', 'any'),
         ('float64', 'int64', 'any')]
for a, b, kind in CASTS:
  add(f'cast/{a}->{b}', 'cast', [rand(a, S, kind)], lambda x, b=b: x.to(TORCH[b]), {'dtype': b})
add('cast/specials_f16', 'cast',
    [torch.tensor([1.0, 0.1, 65504.0, 70000.0, -1e-8, 3.14159265, float('nan'), float('-inf')])],
    lambda x: x.half(), {'dtype': 'float16'})
add('cast/permuted', 'cast', [In(rand('float32', (7, 5)), permute=(1, 0))], lambda x: x.int(), {'dtype': 'int32'})
for a, b in [('float32', 'int32'), ('int32', 'float32'), ('float16', 'int16'), ('int8', 'uint8'), ('uint8', 'int8'),
             ('int64', 'float64'), ('int16', 'float16')]:
  x = rand(a, (3, 4), 'pos' if a == 'int32' else 'any')
  if a == 'int32': x = x * 1000000 + 1065353216  # bit patterns of ordinary floats
  add(f'bitcast/{a}->{b}', 'bitcast', [x], lambda x, b=b: x.view(TORCH[b]), {'dtype': b})

with open(sys.argv[1], 'w') as f:
  json.dump({'generator': 'torch ' + torch.__version__.split('+')[0] + ', numpy ' + np.__version__, 'cases': cases}, f,
            allow_nan=False, separators=(',', ':'))
print(f'{len(cases)} cases')
