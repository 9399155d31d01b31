// Kernels that fault on the GPU, one way each, and a good one: each fault must cost its own
// cell, and a good kernel run after it (on the same GPU server) must still pass.
#include <cassert>

extern "C" __global__ void scale(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

extern "C" __global__ void far_write(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i + (1 << 30)] = x[i];  // 4 GiB past the buffer: an address not mapped
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
