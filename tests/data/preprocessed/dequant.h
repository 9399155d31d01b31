#pragma once
// x
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ inline int dequant(int q) { return q * SCALE; }
#endif
