// The C++ reference the tool's kernel time is measured against (bench/gpu/run.sh): the same
// saxpy over the same 256 MiB arrays, timed by CUDA events around each launch with the L2
// flushed (a memset of twice its size) before each, the median of the samples, and the
// bandwidth from the same bytes (y read and written, x read). Built by the GPU machine's
// nvcc: nvcc -O3 -arch=sm_90 -o saxpy_reference saxpy_reference.cu
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t status = (call);                                                       \
    if (status != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(status));            \
      std::exit(2);                                                                    \
    }                                                                                  \
  } while (0)

extern "C" __global__ void saxpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 64 << 20;
  const int samples = argc > 2 ? std::atoi(argv[2]) : 200;
  float *x, *y;
  CHECK(cudaMalloc(&x, sizeof(float) * n));
  CHECK(cudaMalloc(&y, sizeof(float) * n));
  CHECK(cudaMemset(x, 0, sizeof(float) * n));
  CHECK(cudaMemset(y, 0, sizeof(float) * n));
  int l2 = 0;
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  void* scratch;
  CHECK(cudaMalloc(&scratch, 2 * static_cast<size_t>(l2)));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int block = 256, grid = (n + block - 1) / block;
  saxpy<<<grid, block>>>(y, x, 2.0f, n);  // warm-up
  CHECK(cudaDeviceSynchronize());
  std::vector<float> us;
  for (int s = 0; s < samples; ++s) {
    CHECK(cudaMemsetAsync(scratch, s, 2 * static_cast<size_t>(l2)));
    CHECK(cudaEventRecord(start));
    saxpy<<<grid, block>>>(y, x, 2.0f, n);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    us.push_back(ms * 1000.0f);
  }
  std::sort(us.begin(), us.end());
  const double median = us[us.size() / 2];
  const double bytes = 3.0 * sizeof(float) * n;
  std::printf("{\"n\": %d, \"samples\": %d, \"median_us\": %.3f, \"bandwidth_gbs\": %.2f}\n", n,
              samples, median, bytes / (median * 1e-6) / 1e9);
  return 0;
}
