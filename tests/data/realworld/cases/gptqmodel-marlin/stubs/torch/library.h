#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <variant>
#define TORCH_CHECK(cond, ...) \
  do { if (!(cond)) throw std::runtime_error("TORCH_CHECK failed: " #cond); } while (0)
