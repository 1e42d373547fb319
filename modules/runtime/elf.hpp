#pragma once
// Reading the names of the symbols in one section of an ELF file without loading it. Every offset, size,
// index and string is checked against the file before it is used, so a damaged or hostile file gives an
// error, never a crash, an out-of-bounds read or an allocation sized from its headers.
#include <string>
#include <string_view>
#include <vector>

namespace tg::runtime {

struct SectionSymbols {
  bool has_section = false;  // the section exists
  bool has_symtab = false;   // the file has a symbol table (strip removes it)
  std::vector<std::string> names;
  std::string error;  // why the file cannot be read as an ELF for this machine; the rest is then unset
};
SectionSymbols section_symbols(const std::string& path, std::string_view section);

}  // namespace tg::runtime
