// Kernels that fault on the GPU, one way each, and a good one: each fault must cost its own
// cell, and a good kernel run after it (on the same GPU server) must still pass.
#include <cassert>

extern "C" __global__ void scale(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

extern "C" __global__ void far_write(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  // An address no allocation ever has (the first pages of the address space, made from
  // an argument so the compiler cannot see it): the same fault wherever the buffers lie.
  // (4 GiB past `y` faulted as ILLEGAL_ADDRESS or INVALID_ADDRESS_SPACE, run by run.)
  float* nowhere = reinterpret_cast<float*>(static_cast<unsigned long long>(n) * 16);
  if (i < n) nowhere[i] = x[i];
}

extern "C" __global__ void misaligned(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  // A 4-byte store one byte past an allocation's start: never aligned, wherever it lies
  // (the offset is made from an argument, so the compiler cannot split the store).
  float* off = reinterpret_cast<float*>(reinterpret_cast<char*>(y) + (n & 1) + 1);
  if (i < n) off[i] = x[i];
}

extern "C" __global__ void trap(float* y, const float* x, int n) {
  if (threadIdx.x == 0) __trap();
  y[threadIdx.x] = x[threadIdx.x];
}

extern "C" __global__ void failed_assert(float* y, const float* x, int n) {
  assert(x[threadIdx.x] > 100.0f);  // inputs are in [-1, 1)
  y[threadIdx.x] = x[threadIdx.x];
}

extern "C" __global__ void never_returns(float* y, const float* x, int n) {
  // Waits for an input that never comes (inputs are in [-1, 1)): a read of memory each
  // time, which the compiler may not take out of the loop.
  while (((volatile const float*)x)[0] < 100.0f) {}
  y[threadIdx.x] = x[threadIdx.x];
}
