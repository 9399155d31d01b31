// FlashInfer's RMSNorm kernel as a project using its headers instantiates it. norm.cuh
// reaches <cublasLt.h> and <cublas_v2.h> through its TensorRT-LLM utilities: every CUDA
// install has them, so this builds wherever FlashInfer's own build does.
#include <cuda_fp16.h>
#include <flashinfer/norm.cuh>

template __global__ void flashinfer::norm::RMSNormKernel<8, half>(
    half* __restrict__, half* __restrict__, half* __restrict__, const uint32_t, const uint32_t,
    const uint32_t, float, float);
