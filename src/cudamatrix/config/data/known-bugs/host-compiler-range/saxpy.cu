// A plain kernel with host code: what differs between the cells is nvcc's host compiler.
#include <cuda_runtime.h>
#include <vector>

extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" int host_saxpy_sizes(int n) {
  std::vector<float> host(static_cast<size_t>(n), 1.0f);
  return static_cast<int>(host.size());
}
