// y = a*x + y on the GPU, behind a C entry point a test (or ctypes) can call.
#include <cuda_runtime.h>

__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// Returns 0 when every element is right, else the CUDA error code (or -1 for a wrong
// result): the test's exit status.
extern "C" int saxpy_check(int n) {
  float *x, *y;
  if (cudaError_t e = cudaMallocManaged(&x, n * sizeof(float))) return e;
  if (cudaError_t e = cudaMallocManaged(&y, n * sizeof(float))) return e;
  for (int i = 0; i < n; ++i) { x[i] = float(i); y[i] = 1.0f; }
  saxpy_kernel<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
  if (cudaError_t e = cudaDeviceSynchronize()) return e;
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += y[i] != 2.0f * float(i) + 1.0f;
  cudaFree(x);
  cudaFree(y);
  return wrong ? -1 : 0;
}
