#pragma once
// Everything a device plugin builds against.
#include "tg/sdk/allocator.hpp"
#include "tg/sdk/compiler.hpp"
#include "tg/sdk/device.hpp"
#include "tg/sdk/plugin.hpp"
#include "tg/sdk/program.hpp"
#include "tg/sdk/renderer.hpp"
#include "tg/sdk/status.hpp"
