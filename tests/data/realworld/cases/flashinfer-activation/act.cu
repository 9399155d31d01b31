// FlashInfer's fused SiLU-and-multiply kernel as a project using its headers instantiates
// it: the activation is the project's own function, passed as a template argument.
#include <cuda_fp16.h>
#include <flashinfer/activation.cuh>

__device__ __forceinline__ float silu(const float& x) { return x / (1.0f + __expf(-x)); }

template __global__ void flashinfer::activation::act_and_mul_kernel<half, silu, 8>(
    half* __restrict__, const half* __restrict__, const int);
