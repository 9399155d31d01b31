// One of Marlin's kernels instantiated, as its generated kernel_*.cu files instantiate
// each: fp16 activations, uint8 weights, 128 threads.
#include "marlin/kernel.h"
#include "marlin/marlin_template.h"

namespace MARLIN_NAMESPACE_NAME {
template __global__ void Marlin<half, vllm::kU8.id(), vllm::kFloat16.id(), 128, 1, 4, 8, true,
                                2, -1, false>(MARLIN_KERNEL_PARAMS);
}
