// PyTorch and GGUF checkpoints: files written by torch.save and the gguf package (checkpoint_ref.py) load
// with the values their writers hold, and malformed files (cut short, corrupted sizes, offsets and counts,
// deep nesting, code in the pickle) fail with a clear error and load nothing.
// Arguments after "--": the folder of reference files.
#define BOOST_TEST_MODULE nn_checkpoints
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "nn/checkpoint_fuzz.hpp"
#include "nn/gguf.hpp"
#include "nn/layers.hpp"
#include "nn/module.hpp"
#include "nn/safetensors.hpp"
#include "nn/torch_load.hpp"
#include "tensor/tensor.hpp"

using namespace tg;
using nn::StateDict;
namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;

namespace {

fs::path ref(const std::string& name) {
  auto& suite = boost::unit_test::framework::master_test_suite();
  BOOST_REQUIRE_MESSAGE(suite.argc > 1, "usage: test_checkpoints -- REFERENCE_DIR");
  return fs::path(suite.argv[1]) / name;
}

Bytes read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Bytes b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

// Every tensor of want is in got with the same dtype, shape and bytes, and got has nothing else.
void same(const StateDict& got, const StateDict& want) {
  BOOST_TEST(got.size() == want.size());
  for (const auto& [name, w] : want) {
    BOOST_TEST_CONTEXT("tensor '" << name << "'") {
      auto it = got.find(name);
      BOOST_TEST_REQUIRE((it != got.end()));
      BOOST_TEST(it->second.dtype().name() == w.dtype().name());
      BOOST_TEST(to_ints(it->second.shape()) == to_ints(w.shape()));
      BOOST_TEST((it->second.to_bytes() == w.to_bytes()));
    }
  }
}

// f throws FormatError starting with prefix and containing part.
template <class F>
void fails(F&& f, const std::string& prefix, const std::string& part) {
  try {
    f();
    BOOST_ERROR("no error; expected one containing '" << part << "'");
  } catch (const FormatError& e) {
    std::string m = e.what();
    BOOST_TEST_CONTEXT(m) {
      BOOST_TEST(m.rfind(prefix, 0) == 0);
      BOOST_TEST(m.find(part) != std::string::npos);
    }
  }
}

void put(Bytes& b, const void* p, size_t n) {
  const auto* c = static_cast<const std::byte*>(p);
  b.insert(b.end(), c, c + n);
}
template <class V>
void put(Bytes& b, V v) {
  put(b, &v, sizeof v);
}
void put_str(Bytes& b, std::string_view s) { put(b, s.data(), s.size()); }

// A zip of stored entries (no CRCs: the reader does not check them).
Bytes zip(const std::vector<std::pair<std::string, std::string>>& entries) {
  Bytes out, cd;
  for (const auto& [name, data] : entries) {
    uint32_t local = static_cast<uint32_t>(out.size()), size = static_cast<uint32_t>(data.size());
    put<uint32_t>(out, 0x04034b50);
    put<uint16_t>(out, 20);
    put<uint16_t>(out, 0);
    put<uint16_t>(out, 0);
    put<uint32_t>(out, 0);
    put<uint32_t>(out, 0);
    put<uint32_t>(out, size);
    put<uint32_t>(out, size);
    put<uint16_t>(out, static_cast<uint16_t>(name.size()));
    put<uint16_t>(out, 0);
    put_str(out, name);
    put_str(out, data);
    put<uint32_t>(cd, 0x02014b50);
    put<uint16_t>(cd, 20);
    put<uint16_t>(cd, 20);
    put<uint16_t>(cd, 0);
    put<uint16_t>(cd, 0);
    put<uint32_t>(cd, 0);
    put<uint32_t>(cd, 0);
    put<uint32_t>(cd, size);
    put<uint32_t>(cd, size);
    put<uint16_t>(cd, static_cast<uint16_t>(name.size()));
    put<uint16_t>(cd, 0);
    put<uint16_t>(cd, 0);
    put<uint16_t>(cd, 0);
    put<uint16_t>(cd, 0);
    put<uint32_t>(cd, 0);
    put<uint32_t>(cd, local);
    put_str(cd, name);
  }
  uint32_t cd_off = static_cast<uint32_t>(out.size());
  out.insert(out.end(), cd.begin(), cd.end());
  put<uint32_t>(out, 0x06054b50);
  put<uint16_t>(out, 0);
  put<uint16_t>(out, 0);
  put<uint16_t>(out, static_cast<uint16_t>(entries.size()));
  put<uint16_t>(out, static_cast<uint16_t>(entries.size()));
  put<uint32_t>(out, static_cast<uint32_t>(cd.size()));
  put<uint32_t>(out, cd_off);
  put<uint16_t>(out, 0);
  return out;
}

StateDict torch(const Bytes& b) { return nn::torch_parse(b); }
Bytes pkl_zip(const std::string& pkl, const std::string& storage = "") {
  std::vector<std::pair<std::string, std::string>> e{{"archive/data.pkl", pkl}};
  if (!storage.empty()) e.push_back({"archive/data/0", storage});
  return zip(e);
}
std::string u32s(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string X(const std::string& s) { return "X" + u32s(static_cast<uint32_t>(s.size())) + s; }
std::string L(int64_t v) { return "\x8a\x08" + std::string(reinterpret_cast<const char*>(&v), 8); }  // LONG1
std::string tup(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (int64_t x : v) s += L(x);
  return s + "t";
}
// pickle of {'w': _rebuild_tensor_v2(storage '0' (FloatStorage of 4), offset, size, stride, False, None)}
std::string tensor_pkl(int64_t offset, const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
  return "\x80\x02}" + X("w") + "ctorch._utils\n_rebuild_tensor_v2\n((" + X("storage") +
         "ctorch\nFloatStorage\n" + X("0") + X("cpu") + L(4) + "tQ" + L(offset) + tup(size) + tup(stride) +
         "\x89"
         "NtRs.";
}

}  // namespace

BOOST_AUTO_TEST_CASE(torch_dtypes_written_by_pytorch) {
  same(nn::torch_load(ref("dtypes.pt")), nn::safe_load(ref("dtypes.expect.safetensors")));
}

BOOST_AUTO_TEST_CASE(torch_deflated_entries) {
  same(nn::torch_load(ref("deflated.pt")), nn::safe_load(ref("dtypes.expect.safetensors")));
}

BOOST_AUTO_TEST_CASE(torch_views_strides_offsets_shared_storages_nesting) {
  same(nn::torch_load(ref("views.pt")), nn::safe_load(ref("views.expect.safetensors")));
}

BOOST_AUTO_TEST_CASE(torch_model_state_dict_and_parameters) {
  same(nn::torch_load(ref("model.pt")), nn::safe_load(ref("model.expect.safetensors")));
  same(nn::torch_load(ref("param.pt")), nn::safe_load(ref("param.expect.safetensors")));
}

BOOST_AUTO_TEST_CASE(torch_loads_into_a_model_all_or_nothing) {
  nn::Linear lin(3, 2);
  std::vector<float> w0 = lin.weight.to_vector<float>(), b0 = lin.bias.to_vector<float>();
  Bytes good = read(ref("linear.pt"));
  for (size_t n : {good.size() / 2, good.size() - 30, good.size() - 1}) {
    Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    fails([&] { nn::load_state_dict(lin, torch(cut)); }, "[torch_load]", "");
    BOOST_TEST(lin.weight.to_vector<float>() == w0);
    BOOST_TEST(lin.bias.to_vector<float>() == b0);
  }
  StateDict sd = torch(good);
  nn::load_state_dict(lin, sd);
  BOOST_TEST(lin.weight.to_vector<float>() == sd.at("weight").to_vector<float>());
  BOOST_TEST(lin.bias.to_vector<float>() == sd.at("bias").to_vector<float>());
  BOOST_TEST(lin.weight.to_vector<float>() != w0);
}

BOOST_AUTO_TEST_CASE(torch_refuses_unknown_globals) {
  fails([] { nn::torch_load(ref("evil.pt")); }, "[torch_load]", "refusing pickle global 'posix.system'");
  fails(
      [] {
        torch(
            pkl_zip("\x80\x02"
                    "cbuiltins\neval\n."));
      },
      "[torch_load]", "'builtins.eval'");
}

BOOST_AUTO_TEST_CASE(torch_handmade_tensor_loads) {  // the builder the malformed cases below corrupt
  std::string four(16, '\0');
  float v[4] = {1, 2, 3, 4};
  std::memcpy(four.data(), v, 16);
  StateDict sd = torch(pkl_zip(tensor_pkl(1, {2, 1}, {1, 1}), four));
  BOOST_TEST(to_ints(sd.at("w").shape()) == (std::vector<int64_t>{2, 1}));
  BOOST_TEST(sd.at("w").to_vector<float>() == (std::vector<float>{2, 3}));
  for (const std::string& one :
       {std::string("K\x01"), std::string("M\x01\x00", 3), std::string("J\x01\x00\x00\x00", 5)}) {
    std::string p = tensor_pkl(1, {2, 1}, {1, 1});  // the offset as BININT1, BININT2 and BININT
    p.replace(p.find("tQ") + 2, L(1).size(), one);
    BOOST_TEST(torch(pkl_zip(p, four)).at("w").to_vector<float>() == (std::vector<float>{2, 3}));
  }
  auto bad_tensor = [&](int64_t off, std::vector<int64_t> size, std::vector<int64_t> stride,
                        std::string part) {
    fails([&] { torch(pkl_zip(tensor_pkl(off, size, stride), four)); }, "[torch_load]", part);
  };
  bad_tensor(3, {2, 1}, {1, 1}, "reads element 4 of a storage of 4");
  bad_tensor(-1, {1}, {1}, "negative storage offset");
  bad_tensor(0, {1}, {-1}, "negative size or stride");
  bad_tensor(0, {int64_t{1} << 30}, {0}, "too large");
  bad_tensor(0, {int64_t{1} << 40, int64_t{1} << 40}, {0, 0}, "too large");
  bad_tensor(0, {2}, {int64_t{1} << 62}, "reads element");
  bad_tensor(0, {3, 3}, {int64_t{1} << 62, int64_t{1} << 62}, "overflow");
  bad_tensor(0, {2, 2}, {1}, "dims");
  fails([&] { torch(pkl_zip(tensor_pkl(0, {1}, {1}))); }, "[torch_load]", "no entry data/0");
  fails([&] { torch(pkl_zip(tensor_pkl(0, {1}, {1}), "abc")); }, "[torch_load]", "not a whole number");
}

BOOST_AUTO_TEST_CASE(torch_malformed_pickles) {
  std::string deep = "\x80\x02";
  for (int k = 0; k < 100000; ++k) deep += ']';
  for (int k = 1; k < 100000; ++k) deep += 'a';
  fails([&] { torch(pkl_zip(deep + ".")); }, "[torch_load]", "deeper than");
  fails(
      [&] {
        torch(
            pkl_zip(std::string("\x80\x02]q\x00h\x00"
                                "a.",
                                9)));
      },
      "[torch_load]", "deeper than");  // a cycle
  fails([&] { torch(pkl_zip("\x80\x02X\xff\xff\xff\xff")); }, "[torch_load]", "cut short");
  fails([&] { torch(pkl_zip(std::string("\x80\x02\x8d\xff\xff\xff\xff\xff\xff\xff\x7f", 11))); },
        "[torch_load]", "cut short");
  fails(
      [&] {
        torch(
            pkl_zip("\x80\x02"
                    "a."));
      },
      "[torch_load]", "underflow");
  fails(
      [&] {
        torch(
            pkl_zip("\x80\x02"
                    "h\x05."));
      },
      "[torch_load]", "memo 5");
  fails(
      [&] {
        torch(
            pkl_zip("\x80\x02"
                    "j\xff\xff\xff\x7f."));
      },
      "[torch_load]", "memo");
  fails([&] { torch(pkl_zip(std::string("\x80\x02r\xff\xff\xff\x7f", 7))); }, "[torch_load]", "");
  fails(
      [&] {
        torch(
            pkl_zip("\x80\x02"
                    "K\x01"
                    "K\x02."));
      },
      "[torch_load]", "malformed stack");
  fails(
      [&] {
        torch(
            pkl_zip("\x80\x02"
                    "\xff"));
      },
      "[torch_load]", "opcode 0xff");
  fails([&] { torch(zip({{"archive/other", "x"}})); }, "[torch_load]", "no data.pkl");
  fails([&] { torch(Bytes(10)); }, "[torch_load]", "too short");
  fails([&] { torch(Bytes(100)); }, "[torch_load]", "end-of-central-directory");
}

BOOST_AUTO_TEST_CASE(torch_truncated_and_corrupted_files_fail_cleanly) {
  for (const char* file : {"model.pt", "views.pt", "deflated.pt"}) {
    Bytes good = read(ref(file));
    int errors = 0;
    for (size_t n = 0; n < good.size(); n += std::max<size_t>(1, good.size() / 997)) {
      Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
      fails([&] { torch(cut); }, "[torch_load]", "");
      ++errors;
    }
    BOOST_TEST(errors > 500);
    // each byte set to 0x00, 0x7f, 0xff: no crash and no other exception (fuzz entry runs on host bytes)
    for (size_t at = 0; at < good.size(); ++at)
      for (uint8_t v : {0x00, 0x7f, 0xff}) {
        Bytes b = good;
        b[at] = std::byte{v};
        BOOST_TEST(nn::fuzz_torch_load(reinterpret_cast<const uint8_t*>(b.data()), b.size()) == 0);
      }
  }
  fails([] { torch(Bytes{std::byte{0x80}, std::byte{2}, std::byte{'.'}}); }, "[torch_load]", "legacy");
}

// ---- gguf ----

namespace {

struct G {
  Bytes b;
  G(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    put_str(b, "GGUF");
    put(b, version);
    put(b, n_tensors);
    put(b, n_kv);
  }
  G& str(std::string_view s) {
    put<uint64_t>(b, s.size());
    put_str(b, s);
    return *this;
  }
  template <class V>
  G& kv(std::string_view k, uint32_t type, V v) {
    str(k);
    put(b, type);
    put(b, v);
    return *this;
  }
  G& tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name);
    put<uint32_t>(b, static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) put(b, n);
    put(b, type);
    put(b, offset);
    return *this;
  }
  G& data(size_t align, size_t n) {  // pad to align, then n bytes 0, 1, 2...
    while (b.size() % align) b.push_back(std::byte{0});
    for (size_t k = 0; k < n; ++k) b.push_back(std::byte(static_cast<uint8_t>(k)));
    return *this;
  }
};

nn::GGUFFile gg(const Bytes& b) { return nn::gguf_parse(b); }

}  // namespace

BOOST_AUTO_TEST_CASE(gguf_written_by_the_gguf_package) {
  StateDict want = nn::safe_load(ref("gguf.expect.safetensors"));
  want["bf16"] = nn::safe_load(ref("gguf_bf16.expect.safetensors")).at("bf16");
  for (const char* file : {"model.gguf", "aligned.gguf", "v2.gguf"}) {
    BOOST_TEST_CONTEXT(file) {
      nn::GGUFFile g = nn::gguf_load(ref(file));
      same(g.tensors, want);
      using T = nn::GGUFValue::Type;
      const auto& m = g.metadata;
      BOOST_TEST((m.at("t.u8").type == T::UINT8 && m.at("t.u8").u == 200));
      BOOST_TEST((m.at("t.i8").type == T::INT8 && m.at("t.i8").i == -100));
      BOOST_TEST((m.at("t.u16").type == T::UINT16 && m.at("t.u16").u == 60000));
      BOOST_TEST((m.at("t.i16").type == T::INT16 && m.at("t.i16").i == -30000));
      BOOST_TEST((m.at("t.u32").type == T::UINT32 && m.at("t.u32").u == 4000000000u));
      BOOST_TEST((m.at("t.i32").type == T::INT32 && m.at("t.i32").i == -2000000000));
      BOOST_TEST((m.at("t.f32").type == T::FLOAT32 && m.at("t.f32").f == 0.25));
      BOOST_TEST((m.at("t.u64").type == T::UINT64 && m.at("t.u64").u == (uint64_t{1} << 63) + 5));
      BOOST_TEST((m.at("t.i64").type == T::INT64 && m.at("t.i64").i == -(int64_t{1} << 62)));
      BOOST_TEST((m.at("t.f64").type == T::FLOAT64 && m.at("t.f64").f == 1e-300));
      BOOST_TEST((m.at("t.bool").type == T::BOOL && m.at("t.bool").u == 1));
      BOOST_TEST((m.at("t.str").type == T::STRING && m.at("t.str").s == "h\xc3\xa9llo"));
      const auto& ai = m.at("t.arr_i");
      BOOST_TEST_REQUIRE((ai.type == T::ARRAY && ai.array.size() == 3));
      BOOST_TEST((ai.array[2].i == 3 || ai.array[2].u == 3));
      const auto& as = m.at("t.arr_s");
      BOOST_TEST_REQUIRE((as.type == T::ARRAY && as.array_type == T::STRING && as.array.size() == 3));
      BOOST_TEST(as.array[1].s == "bc");
      BOOST_TEST(m.at("general.architecture").s == "test");
    }
  }
  BOOST_TEST(nn::gguf_load(ref("aligned.gguf")).metadata.at("general.alignment").u == 64u);
}

BOOST_AUTO_TEST_CASE(gguf_handmade_and_malformed) {
  Bytes ok = G(3, 1, 1).kv("general.alignment", 4, uint32_t{16}).tensor("t", {4}, 24, 0).data(16, 4).b;
  BOOST_TEST(gg(ok).tensors.at("t").to_vector<int8_t>() == (std::vector<int8_t>{0, 1, 2, 3}));
  BOOST_TEST(gg(G(3, 0, 0).b).tensors.empty());
  fails(
      [] {
        Bytes b = G(3, 0, 0).b;
        b[0] = std::byte{'X'};
        gg(b);
      },
      "[gguf_load]", "bad magic");
  fails([] { gg(G(1, 0, 0).b); }, "[gguf_load]", "version 1");
  fails([] { gg(G(4, 0, 0).b); }, "[gguf_load]", "version 4");
  fails([] { gg(G(3, 0, uint64_t{1} << 62).b); }, "[gguf_load]", "metadata count");
  fails([] { gg(G(3, uint64_t{1} << 62, 0).b); }, "[gguf_load]", "tensor count");
  fails([] { gg(G(3, 0, 1).str("k").b); }, "[gguf_load]", "metadata count 1 does not fit");
  fails([] { gg(G(3, 0, 1).str("k").data(1, 3).b); }, "[gguf_load]", "k needs 4 bytes");
  fails(
      [] {
        G g(3, 0, 1);
        put<uint64_t>(g.b, uint64_t{1} << 60);
        gg(g.data(1, 16).b);
      },
      "[gguf_load]", "metadata key needs");
  fails([] { gg(G(3, 0, 1).kv("k", 8, uint64_t{1} << 60).b); }, "[gguf_load]", "k needs");
  fails(
      [] {
        G g(3, 0, 1);
        g.str("k");
        put<uint32_t>(g.b, 9);
        put<uint32_t>(g.b, 0);
        put<uint64_t>(g.b, uint64_t{1} << 62);
        gg(g.b);
      },
      "[gguf_load]", "array of");
  fails(
      [] {
        G g(3, 0, 1);
        g.str("k");
        put<uint32_t>(g.b, 9);
        for (int k = 0; k < 20; ++k) {
          put<uint32_t>(g.b, 9);
          put<uint64_t>(g.b, 1);
        }
        gg(g.b);
      },
      "[gguf_load]", "nest");
  fails([] { gg(G(3, 0, 1).kv("k", 13, uint32_t{0}).b); }, "[gguf_load]", "unknown value type 13");
  fails([] { gg(G(3, 0, 1).kv("k", 7, uint8_t{2}).b); }, "[gguf_load]", "bool");
  fails([] { gg(G(3, 0, 2).kv("k", 0, uint8_t{1}).kv("k", 0, uint8_t{1}).b); }, "[gguf_load]", "twice");
  fails([] { gg(G(3, 0, 1).kv("general.alignment", 4, uint32_t{24}).b); }, "[gguf_load]", "power of two");
  fails([] { gg(G(3, 0, 1).kv("general.alignment", 0, uint8_t{16}).b); }, "[gguf_load]", "uint32");
  fails([] { gg(G(3, 1, 0).tensor("t", {4}, 0, 0).data(32, 15).b); }, "[gguf_load]", "run past the end");
  fails([] { gg(G(3, 1, 0).tensor("t", {4}, 0, uint64_t{1} << 63).data(32, 16).b); }, "[gguf_load]", "");
  fails([] { gg(G(3, 1, 0).tensor("t", {4}, 0, 8).data(32, 64).b); }, "[gguf_load]", "not a multiple of 32");
  fails([] { gg(G(3, 2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).data(32, 64).b); }, "[gguf_load]",
        "overlap");
  fails([] { gg(G(3, 2, 0).tensor("a", {4}, 0, 0).tensor("a", {4}, 0, 32).data(32, 64).b); }, "[gguf_load]",
        "appears twice");
  fails([] { gg(G(3, 1, 0).tensor("t", {1, 1, 1, 1, 1}, 0, 0).data(32, 4).b); }, "[gguf_load]", "5 dims");
  fails([] { gg(G(3, 1, 0).tensor("t", {4}, 99, 0).data(32, 64).b); }, "[gguf_load]", "ggml type 99");
  fails([] { gg(G(3, 1, 0).tensor("t", {16}, 2, 0).data(32, 64).b); }, "[gguf_load]", "blocks of 32");
  fails(
      [] {
        gg(G(3, 1, 0).tensor("t", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0).data(32, 64).b);
      },
      "[gguf_load]", "too large");
  fails([] { gg(G(3, 1, 0).tensor("t", {uint64_t{1} << 30}, 0, 0).data(32, 64).b); }, "[gguf_load]", "");
}

BOOST_AUTO_TEST_CASE(gguf_truncated_and_corrupted_files_fail_cleanly) {
  Bytes good = read(ref("model.gguf"));
  for (size_t n = 0; n < good.size(); ++n) {
    Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    try {
      gg(cut);
      BOOST_TEST(n + 32 > good.size(),
                 "a cut at " << n << " loaded");  // only the last tensor's padding may go
    } catch (const FormatError& e) {
      BOOST_TEST(std::string(e.what()).rfind("[gguf_load]", 0) == 0);
    }
  }
  for (size_t at = 0; at < good.size(); ++at)
    for (uint8_t v : {0x00, 0x7f, 0xff}) {
      Bytes b = good;
      b[at] = std::byte{v};
      BOOST_TEST(nn::fuzz_gguf_load(reinterpret_cast<const uint8_t*>(b.data()), b.size()) == 0);
    }
}
