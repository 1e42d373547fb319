#include "runtime/elf.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>

#include <fmt/format.h>

namespace tg::runtime {

namespace {

#if defined(__x86_64__)
constexpr uint16_t kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kMachine = EM_AARCH64;
#else
constexpr uint16_t kMachine = EM_NONE;  // any: the dynamic loader has the last word
#endif
constexpr uint64_t kMaxName = 4096;  // longer symbol or section names are refused

// Reads [offset, offset + n) of the file when it lies inside it.
class File {
 public:
  explicit File(const std::string& path) : in_(path, std::ios::binary) {
    if (in_) in_.seekg(0, std::ios::end), size_ = static_cast<uint64_t>(in_.tellg());
  }
  bool ok() const { return static_cast<bool>(in_); }
  uint64_t size() const { return size_; }
  bool inside(uint64_t offset, uint64_t n) const { return offset <= size_ && n <= size_ - offset; }
  bool read(uint64_t offset, void* dst, uint64_t n) {
    if (!inside(offset, n)) return false;
    in_.seekg(static_cast<std::streamoff>(offset));
    return static_cast<bool>(in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n)));
  }
  // The NUL-terminated string at offset inside [table, table + table_size).
  std::optional<std::string> string_at(uint64_t table, uint64_t table_size, uint64_t offset) {
    if (offset >= table_size) return std::nullopt;
    uint64_t n = std::min(table_size - offset, kMaxName);
    std::string s(n, '\0');
    if (!read(table + offset, s.data(), n)) return std::nullopt;
    size_t end = s.find('\0');
    if (end == std::string::npos) return std::nullopt;
    s.resize(end);
    return s;
  }

 private:
  std::ifstream in_;
  uint64_t size_ = 0;
};

}  // namespace

SectionSymbols section_symbols(const std::string& path, std::string_view section) {
  SectionSymbols out;
  auto fail = [&out](std::string why) {
    out = SectionSymbols{};
    out.error = std::move(why);
    return out;
  };
  File f(path);
  Elf64_Ehdr eh{};
  if (!f.ok() || !f.read(0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return fail("not an ELF file");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return fail("built for another architecture (not a 64-bit little-endian ELF)");
  if (kMachine != EM_NONE && eh.e_machine != kMachine)
    return fail(fmt::format("built for another architecture (ELF machine {}, this one is {})", eh.e_machine,
                            kMachine));
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
      !f.inside(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr)))
    return fail("damaged ELF: the section header table lies outside the file");
  if (eh.e_shstrndx >= eh.e_shnum) return fail("damaged ELF: the section name table's index is out of range");
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  f.read(eh.e_shoff, sh.data(), sh.size() * sizeof(Elf64_Shdr));
  const Elf64_Shdr& names = sh[eh.e_shstrndx];
  if (!f.inside(names.sh_offset, names.sh_size))
    return fail("damaged ELF: the section name table lies outside the file");
  std::optional<size_t> wanted;
  for (size_t i = 0; i < sh.size(); i++) {
    if (sh[i].sh_type == SHT_SYMTAB) out.has_symtab = true;
    std::optional<std::string> name = f.string_at(names.sh_offset, names.sh_size, sh[i].sh_name);
    if (!name) return fail(fmt::format("damaged ELF: section {} has no readable name", i));
    if (*name == section) wanted = i;
  }
  out.has_section = wanted.has_value();
  if (!wanted) return out;
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_type != SHT_SYMTAB) continue;
    if (s.sh_entsize != sizeof(Elf64_Sym) || s.sh_link >= sh.size() || !f.inside(s.sh_offset, s.sh_size))
      return fail("damaged ELF: the symbol table lies outside the file");
    const Elf64_Shdr& strings = sh[s.sh_link];
    if (!f.inside(strings.sh_offset, strings.sh_size))
      return fail("damaged ELF: the symbol name table lies outside the file");
    std::vector<Elf64_Sym> chunk(4096);  // a bounded buffer, whatever the table claims
    for (uint64_t done = 0, count = s.sh_size / sizeof(Elf64_Sym); done < count; done += chunk.size()) {
      uint64_t n = std::min<uint64_t>(chunk.size(), count - done);
      f.read(s.sh_offset + done * sizeof(Elf64_Sym), chunk.data(), n * sizeof(Elf64_Sym));
      for (uint64_t k = 0; k < n; k++) {
        if (chunk[k].st_shndx != *wanted) continue;
        std::optional<std::string> name = f.string_at(strings.sh_offset, strings.sh_size, chunk[k].st_name);
        if (!name) return fail("damaged ELF: a symbol of the section has no readable name");
        out.names.push_back(std::move(*name));
      }
    }
  }
  return out;
}

}  // namespace tg::runtime
