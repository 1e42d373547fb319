#include "uop/ops.hpp"

#include <array>

namespace tg {

namespace {
constexpr std::array<std::string_view, kOpsCount> kNames = {
    "SINK",        "NOOP",          "CONST",        "DEFINE_VAR", "BIND",       "UNIQUE",   "DEVICE",
    "BUFFER",      "BUFFER_VIEW",   "COPY",         "ASSIGN",     "CONTIGUOUS", "DETACH",   "KERNEL",
    "AFTER",       "RESHAPE",       "PERMUTE",      "EXPAND",     "PAD",        "SHRINK",   "FLIP",
    "REDUCE_AXIS", "REDUCE",        "EXP2",         "LOG2",       "SIN",        "SQRT",     "RECIPROCAL",
    "NEG",         "TRUNC",         "CAST",         "BITCAST",    "ADD",        "MUL",      "IDIV",
    "MOD",         "MAX",           "CMPLT",        "CMPNE",      "CMPEQ",      "AND",      "OR",
    "XOR",         "SHL",           "SHR",          "FDIV",       "POW",        "THREEFRY", "WHERE",
    "MULACC",      "DEFINE_GLOBAL", "DEFINE_LOCAL", "DEFINE_REG", "RANGE",      "END",      "INDEX",
    "LOAD",        "STORE",         "SPECIAL",      "BARRIER",    "IF",         "ENDIF",    "VECTORIZE",
    "GEP",         "WMMA",          "UNROLL",       "CONTRACT",   "CUSTOM",     "MULTI",
};
static_assert(kNames[kOpsCount - 1] == "MULTI", "kNames must list every op in enum order");
}  // namespace

std::string_view op_name(Ops op) { return kNames[static_cast<int>(op)]; }

}  // namespace tg
