// Plugin ELF inspection: headers, section table, section names, symbol table and string table bounds.
#include "common.hpp"
#include "runtime/elf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // section_symbols reports a bad file in .error and never throws.
  auto r = tg::runtime::section_symbols(tg::fuzz::input_file(data, size), "tgplugin");
  if (!r.error.empty() && (r.has_section || r.has_symtab || !r.names.empty())) __builtin_trap();
  return 0;
}
