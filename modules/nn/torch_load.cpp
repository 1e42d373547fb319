// PyTorch zip checkpoints: the zip's central directory, a pickle interpreter for the subset torch.save
// writes (no code runs: globals are looked up in a fixed table), and tensors rebuilt from storages with
// their sizes, strides and offsets. Everything is checked on host bytes before a tensor is created.
#include "nn/torch_load.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "nn/checkpoint_fuzz.hpp"
#include "nn/host_bytes.hpp"
#include "nn/host_file.hpp"
#include "nn/zip_reader.hpp"

namespace tg::nn {

static_assert(std::endian::native == std::endian::little, "checkpoint data is little-endian");

namespace {

using detail::entry_bytes;
using detail::read_zip;
using detail::ZipEntry;
FormatError torch_error(std::string_view what) { return FormatError("torch_load", what); }

using Bytes = std::span<const std::byte>;

template <class T>
T load_le(Bytes b, uint64_t at) {
  T v{};
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

// ---- pickle ----

struct StorageInfo {
  DType dtype;
  std::string key;
};

struct Obj {
  enum Kind { NONE, BOOL, INT, FLOAT, STR, LIST, TUPLE, DICT, GLOBAL, STORAGE, TENSOR, MARK } kind = NONE;
  int64_t i = 0;
  double f = 0;
  std::string s;                           // STR, GLOBAL ("module.name")
  std::vector<Obj*> items;                 // LIST, TUPLE, DICT (key, value, key, value...)
  StorageInfo storage{dtypes::uint8, {}};  // STORAGE
  int64_t offset = 0;                      // TENSOR: storage offset, in elements
  std::vector<int64_t> size, stride;       // TENSOR
  const Obj* base = nullptr;               // TENSOR: its STORAGE
};

constexpr int kMaxDepth = 200;

std::optional<DType> storage_dtype(std::string_view name) {
  static const std::pair<std::string_view, DType> kinds[] = {
      {"FloatStorage", dtypes::float32}, {"DoubleStorage", dtypes::float64},
      {"HalfStorage", dtypes::float16},  {"BFloat16Storage", dtypes::bfloat16},
      {"LongStorage", dtypes::int64},    {"IntStorage", dtypes::int32},
      {"ShortStorage", dtypes::int16},   {"CharStorage", dtypes::int8},
      {"ByteStorage", dtypes::uint8},    {"BoolStorage", dtypes::bool_}};
  for (const auto& [n, d] : kinds)
    if (n == name) return d;
  return std::nullopt;
}

class Unpickler {
 public:
  explicit Unpickler(Bytes p) : p_(p) {}

  const Obj* run() {
    while (true) {
      uint8_t op = u8();
      switch (op) {
        case 0x80:
          u8();
          break;  // PROTO
        case 0x95:
          take(8);
          break;     // FRAME
        case '.': {  // STOP
          if (stack_.size() != 1) throw torch_error("pickle stops with a malformed stack");
          return stack_.back();
        }
        case '(':
          push(make(Obj::MARK));
          break;
        case '}':
          push(make(Obj::DICT));
          break;
        case ']':
          push(make(Obj::LIST));
          break;
        case ')':
          push(make(Obj::TUPLE));
          break;
        case 't': {
          Obj* t = make(Obj::TUPLE);
          t->items = pop_mark();
          push(t);
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {
          Obj* t = make(Obj::TUPLE);
          size_t n = op - 0x84u;
          t->items.resize(n);
          for (size_t k = n; k-- > 0;) t->items[k] = pop();
          push(t);
          break;
        }
        case 'q':
          memo(u8());
          break;
        case 'r':
          memo(u32());
          break;
        case 0x94:
          memo(memo_.size());
          break;
        case 'h':
          push(get(u8()));
          break;
        case 'j':
          push(get(u32()));
          break;
        case 'J': {
          Obj* o = make(Obj::INT);
          o->i = static_cast<int32_t>(u32());
          push(o);
          break;
        }
        case 'K': {
          Obj* o = make(Obj::INT);
          o->i = u8();
          push(o);
          break;
        }
        case 'M': {
          Obj* o = make(Obj::INT);
          o->i = load_le<uint16_t>(take(2), 0);
          push(o);
          break;
        }
        case 0x8a: {  // LONG1
          size_t n = u8();
          if (n > 8) throw torch_error(fmt::format("pickle integer of {} bytes is too large", n));
          Bytes b = take(n);
          uint64_t v = 0;
          for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(b[k]) << (8 * k);
          if (n > 0 && n < 8 && (static_cast<uint8_t>(b[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);
          Obj* o = make(Obj::INT);
          o->i = static_cast<int64_t>(v);
          push(o);
          break;
        }
        case 'G': {
          uint64_t v = 0;
          for (std::byte b : take(8)) v = (v << 8) | static_cast<uint8_t>(b);
          Obj* o = make(Obj::FLOAT);
          o->f = std::bit_cast<double>(v);
          push(o);
          break;
        }
        case 'X':
          str(u32());
          break;
        case 0x8c:
          str(u8());
          break;
        case 0x8d:
          str(u64());
          break;
        case 'T':
          str(u32());
          break;
        case 'U':
          str(u8());
          break;
        case 'N':
          push(make(Obj::NONE));
          break;
        case 0x88:
        case 0x89: {
          Obj* o = make(Obj::BOOL);
          o->i = op == 0x88;
          push(o);
          break;
        }
        case 'c': {
          std::string mod = line(), name = line();
          push(global(mod, name));
          break;
        }
        case 0x93: {
          Obj* name = pop();
          Obj* mod = pop();
          if (mod->kind != Obj::STR || name->kind != Obj::STR)
            throw torch_error("STACK_GLOBAL needs two strings");
          push(global(mod->s, name->s));
          break;
        }
        case 's': {
          Obj* v = pop();
          Obj* k = pop();
          add_items(top(), {k, v});
          break;
        }
        case 'u': {
          std::vector<Obj*> kv = pop_mark();
          add_items(top(), kv);
          break;
        }
        case 'a': {
          Obj* v = pop();
          append(top(), {v});
          break;
        }
        case 'e': {
          std::vector<Obj*> v = pop_mark();
          append(top(), v);
          break;
        }
        case '0':
          pop();
          break;
        case '1':
          pop_mark();
          break;
        case '2':
          push(top());
          break;
        case 'b':
          pop();
          top();
          break;  // BUILD: an OrderedDict's __dict__ (state_dict's _metadata) is dropped
        case 'Q':
          push(persistent(pop()));
          break;
        case 'R': {
          Obj* args = pop();
          Obj* fn = pop();
          push(reduce(fn, args));
          break;
        }
        case 0x81: {
          Obj* args = pop();
          Obj* cls = pop();
          push(reduce(cls, args));
          break;
        }  // NEWOBJ
        default:
          throw torch_error(fmt::format("pickle opcode 0x{:02x} at byte {} is not supported", op, at_ - 1));
      }
    }
  }
  std::vector<Obj*> storages;  // every STORAGE, for the caller to attach bytes

 private:
  Bytes take(uint64_t n) {
    if (n > p_.size() - at_)
      throw torch_error(fmt::format("pickle is cut short at byte {} (needs {} more bytes)", at_, n));
    Bytes b = p_.subspan(at_, n);
    at_ += n;
    return b;
  }
  uint8_t u8() { return static_cast<uint8_t>(take(1)[0]); }
  uint32_t u32() { return load_le<uint32_t>(take(4), 0); }
  uint64_t u64() { return load_le<uint64_t>(take(8), 0); }
  void str(uint64_t n) {
    Bytes b = take(n);  // checked against the pickle's size before anything is allocated
    Obj* o = make(Obj::STR);
    o->s.assign(reinterpret_cast<const char*>(b.data()), b.size());
    push(o);
  }
  std::string line() {
    std::string s;
    while (true) {
      char c = static_cast<char>(u8());
      if (c == '\n') return s;
      if (s.size() > 256) throw torch_error("pickle GLOBAL name is too long");
      s += c;
    }
  }
  Obj* make(Obj::Kind k) {
    arena_.push_back(std::make_unique<Obj>());
    arena_.back()->kind = k;
    return arena_.back().get();
  }
  void push(Obj* o) { stack_.push_back(o); }
  Obj* top() {
    if (stack_.empty() || stack_.back()->kind == Obj::MARK)
      throw torch_error(fmt::format("pickle stack underflow at byte {}", at_));
    return stack_.back();
  }
  Obj* pop() {
    Obj* o = top();
    stack_.pop_back();
    return o;
  }
  std::vector<Obj*> pop_mark() {
    auto it = std::find_if(stack_.rbegin(), stack_.rend(), [](Obj* o) { return o->kind == Obj::MARK; });
    if (it == stack_.rend())
      throw torch_error(fmt::format("pickle has no MARK for the opcode at byte {}", at_ - 1));
    std::vector<Obj*> out(it.base(), stack_.end());
    stack_.erase(it.base() - 1, stack_.end());
    return out;
  }
  void memo(uint64_t k) {
    if (k > memo_.size() + (1u << 20)) throw torch_error(fmt::format("pickle memo index {} is too large", k));
    if (k >= memo_.size()) memo_.resize(k + 1, nullptr);
    memo_[k] = top();
  }
  Obj* get(uint64_t k) {
    if (k >= memo_.size() || !memo_[k])
      throw torch_error(fmt::format("pickle reads memo {} that was never stored", k));
    return memo_[k];
  }
  void add_items(Obj* d, const std::vector<Obj*>& kv) {
    if (d->kind != Obj::DICT || kv.size() % 2)
      throw torch_error("pickle SETITEM(S) on something that is not a dict");
    d->items.insert(d->items.end(), kv.begin(), kv.end());
  }
  void append(Obj* l, const std::vector<Obj*>& v) {
    if (l->kind != Obj::LIST) throw torch_error("pickle APPEND(S) on something that is not a list");
    l->items.insert(l->items.end(), v.begin(), v.end());
  }
  Obj* global(const std::string& mod, const std::string& name) {
    std::string full = mod + "." + name;
    bool known = full == "collections.OrderedDict" || full == "torch._utils._rebuild_tensor_v2" ||
                 full == "torch._utils._rebuild_tensor" || full == "torch._utils._rebuild_parameter" ||
                 (mod == "torch" && storage_dtype(name));
    if (!known)
      throw torch_error(
          fmt::format("refusing pickle global '{}': only tensors, storages and containers are loaded", full));
    Obj* g = make(Obj::GLOBAL);
    g->s = full;
    return g;
  }
  static std::vector<int64_t> ints(const Obj* t, std::string_view what) {
    if (t->kind != Obj::TUPLE) throw torch_error(fmt::format("tensor {} is not a tuple", what));
    std::vector<int64_t> out;
    for (const Obj* o : t->items) {
      if (o->kind != Obj::INT) throw torch_error(fmt::format("tensor {} holds a non-integer", what));
      out.push_back(o->i);
    }
    return out;
  }
  Obj* persistent(Obj* pid) {  // ('storage', torch.XStorage, key, location, numel)
    if (pid->kind != Obj::TUPLE || pid->items.size() < 5 || pid->items[0]->kind != Obj::STR ||
        pid->items[0]->s != "storage" || pid->items[1]->kind != Obj::GLOBAL ||
        pid->items[2]->kind != Obj::STR)
      throw torch_error("persistent id is not ('storage', type, key, location, size)");
    std::optional<DType> d = storage_dtype(pid->items[1]->s.substr(pid->items[1]->s.rfind('.') + 1));
    if (!d) throw torch_error(fmt::format("'{}' is not a storage type", pid->items[1]->s));
    // every view of a storage names it again: one object, read once
    if (auto it = by_key_.find(pid->items[2]->s); it != by_key_.end()) {
      if (it->second->storage.dtype != *d)
        throw torch_error(fmt::format("storage '{}' has two dtypes", it->first));
      return it->second;
    }
    Obj* s = make(Obj::STORAGE);
    s->storage = {*d, pid->items[2]->s};
    storages.push_back(s);
    by_key_.emplace(s->storage.key, s);
    return s;
  }
  Obj* reduce(Obj* fn, Obj* args) {
    if (fn->kind != Obj::GLOBAL)
      throw torch_error("pickle REDUCE calls something that is not a known global");
    if (args->kind != Obj::TUPLE)
      throw torch_error(fmt::format("'{}' called without an argument tuple", fn->s));
    const auto& a = args->items;
    if (fn->s == "collections.OrderedDict") {
      if (!a.empty()) throw torch_error("OrderedDict with arguments is not supported");
      return make(Obj::DICT);
    }
    if (fn->s == "torch._utils._rebuild_parameter") {
      if (a.empty() || a[0]->kind != Obj::TENSOR) throw torch_error("_rebuild_parameter needs a tensor");
      return a[0];
    }
    if (fn->s == "torch._utils._rebuild_tensor_v2" || fn->s == "torch._utils._rebuild_tensor") {
      if (a.size() < 4 || a[0]->kind != Obj::STORAGE || a[1]->kind != Obj::INT)
        throw torch_error(fmt::format("'{}' needs (storage, offset, size, stride, ...)", fn->s));
      Obj* t = make(Obj::TENSOR);
      t->base = a[0];
      t->offset = a[1]->i;
      t->size = ints(a[2], "size");
      t->stride = ints(a[3], "stride");
      if (t->size.size() != t->stride.size())
        throw torch_error(
            fmt::format("tensor size has {} dims but stride {}", t->size.size(), t->stride.size()));
      return t;
    }
    throw torch_error(fmt::format("'{}' cannot be called", fn->s));
  }

  Bytes p_;
  uint64_t at_ = 0;
  std::vector<Obj*> stack_, memo_;
  std::vector<std::unique_ptr<Obj>> arena_;
  std::map<std::string, Obj*> by_key_;
};

struct HostTensor {
  std::string name;
  DType dtype;
  Shape shape;
  std::vector<std::byte> bytes;
};

struct Walker {
  std::vector<HostTensor> out;
  std::set<std::string> names;
  uint64_t budget;  // total bytes the tensors may expand to (views with zero strides repeat storage bytes)

  void walk(const Obj* o, const std::string& name, int depth) {
    if (depth > kMaxDepth)
      throw torch_error(fmt::format("pickle nests containers deeper than {} levels", kMaxDepth));
    auto child = [&](const std::string& k) { return name.empty() ? k : name + "." + k; };
    switch (o->kind) {
      case Obj::DICT:
        for (size_t k = 0; k < o->items.size(); k += 2) {
          const Obj* key = o->items[k];
          std::string ks = key->kind == Obj::STR   ? key->s
                           : key->kind == Obj::INT ? std::to_string(key->i)
                                                   : "";
          if (key->kind != Obj::STR && key->kind != Obj::INT)
            throw torch_error("dict key is not a string or an integer");
          walk(o->items[k + 1], child(ks), depth + 1);
        }
        break;
      case Obj::LIST:
      case Obj::TUPLE:
        for (size_t k = 0; k < o->items.size(); ++k) walk(o->items[k], child(std::to_string(k)), depth + 1);
        break;
      case Obj::TENSOR:
        tensor(o, name);
        break;
      case Obj::NONE:
      case Obj::BOOL:
      case Obj::INT:
      case Obj::FLOAT:
      case Obj::STR:
        break;
      default:
        throw torch_error(fmt::format("'{}' holds a value that is not a tensor or container", name));
    }
  }

  void tensor(const Obj* t, const std::string& name) {
    if (!names.insert(name).second) throw torch_error(fmt::format("two tensors are named '{}'", name));
    const Obj* s = t->base;
    uint64_t item = s->storage.dtype.itemsize(), numel = s->i;  // i: the storage's element count
    if (t->offset < 0)
      throw torch_error(fmt::format("tensor '{}': negative storage offset {}", name, t->offset));
    uint64_t count = 1, last = static_cast<uint64_t>(t->offset);
    for (size_t d = 0; d < t->size.size(); ++d) {
      if (t->size[d] < 0 || t->stride[d] < 0)
        throw torch_error(fmt::format("tensor '{}': negative size or stride in dim {}", name, d));
      if (t->size[d] == 0) count = 0;
    }
    for (size_t d = 0; d < t->size.size() && count; ++d) {
      uint64_t n = t->size[d], st = t->stride[d];
      if (count > budget / n)
        throw torch_error(fmt::format("tensor '{}': shape is too large for the file", name));
      count *= n;
      if (st != 0 && n - 1 > (UINT64_MAX - last) / st)
        throw torch_error(fmt::format("tensor '{}': strides overflow", name));
      last += (n - 1) * st;
    }
    if (count && last >= numel)
      throw torch_error(
          fmt::format("tensor '{}': reads element {} of a storage of {} elements", name, last, numel));
    if (count * item > budget)
      throw torch_error(fmt::format("tensor '{}' expands past the file's size", name));
    budget -= count * item;
    HostTensor h{name, s->storage.dtype, Shape(t->size.begin(), t->size.end()), {}};
    h.bytes.resize(count * item);
    const std::byte* src = reinterpret_cast<const std::byte*>(s->s.data());
    std::vector<int64_t> idx(t->size.size(), 0);
    for (uint64_t e = 0; e < count; ++e) {
      uint64_t at = t->offset;
      for (size_t d = 0; d < idx.size(); ++d) at += idx[d] * t->stride[d];
      std::memcpy(h.bytes.data() + e * item, src + at * item, item);
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < t->size[d]) break;
        idx[d] = 0;
      }
    }
    out.push_back(std::move(h));
  }
};

std::vector<HostTensor> parse_host(Bytes f) {
  if (f.size() >= 2 && static_cast<uint8_t>(f[0]) == 0x80)
    throw torch_error("legacy (non-zip) checkpoints are not supported: re-save with a current torch.save");
  std::vector<ZipEntry> entries = read_zip(f, "torch_load");
  const ZipEntry* pkl = nullptr;
  for (const ZipEntry& e : entries)
    if (e.name.size() >= 8 && e.name.ends_with("data.pkl") &&
        (e.name.size() == 8 || e.name[e.name.size() - 9] == '/') && e.name.find('/') + 9 == e.name.size()) {
      if (pkl) throw torch_error("archive has two data.pkl entries");
      pkl = &e;
    }
  if (!pkl) throw torch_error("archive has no data.pkl entry");
  std::string prefix = pkl->name.substr(0, pkl->name.size() - 8);
  auto find = [&](const std::string& n) -> const ZipEntry* {
    for (const ZipEntry& e : entries)
      if (e.name == prefix + n) return &e;
    return nullptr;
  };
  if (const ZipEntry* bo = find("byteorder")) {
    std::vector<std::byte> keep;
    Bytes b = entry_bytes("torch_load", f, *bo, keep);
    if (std::string_view(reinterpret_cast<const char*>(b.data()), b.size()) != "little")
      throw torch_error("big-endian checkpoints are not supported");
  }
  std::vector<std::byte> keep_pkl;
  Bytes pk = entry_bytes("torch_load", f, *pkl, keep_pkl);
  Unpickler u(pk);
  const Obj* root = u.run();
  for (Obj* s : u.storages) {
    const ZipEntry* e = find("data/" + s->storage.key);
    if (!e)
      throw torch_error(fmt::format("storage '{}' has no entry data/{}", s->storage.key, s->storage.key));
    std::vector<std::byte> keep;
    Bytes b = entry_bytes("torch_load", f, *e, keep);
    uint64_t item = s->storage.dtype.itemsize();
    if (b.size() % item)
      throw torch_error(fmt::format("storage '{}' holds {} bytes, not a whole number of {}", s->storage.key,
                                    b.size(), s->storage.dtype.name()));
    s->s.assign(reinterpret_cast<const char*>(b.data()), b.size());
    s->i = static_cast<int64_t>(b.size() / item);
  }
  Walker w{{}, {}, f.size() * 16 + (uint64_t{1} << 20)};
  w.walk(root, "", 0);
  return w.out;
}

}  // namespace

StateDict torch_parse(std::span<const std::byte> data, std::string_view device) {
  std::vector<HostTensor> host = parse_host(data);
  StateDict out;
  for (const HostTensor& h : host)
    out.emplace(h.name, detail::tensor_from_bytes(h.bytes, h.dtype, h.shape, device));
  return out;
}

StateDict torch_load(const std::filesystem::path& path, std::string_view device) {
  return torch_parse(detail::HostFile(path, "torch_load").read_all(), device);
}

int fuzz_torch_load(const uint8_t* data, size_t size) {
  try {
    parse_host({reinterpret_cast<const std::byte*>(data), size});
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace tg::nn
