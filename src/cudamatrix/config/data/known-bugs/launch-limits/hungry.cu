// A kernel that keeps many values live at once: built with a generous register cap,
// it needs more than 64 registers per thread, so a 1024-thread block asks for more
// registers than one multiprocessor has (64K) and the launch is refused.
#define LIVE 96

extern "C" __global__ void hungry(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v[LIVE];
#pragma unroll
  for (int k = 0; k < LIVE; ++k) v[k] = x[(i + k * 7) % n];
#pragma unroll
  for (int round = 0; round < 4; ++round) {
#pragma unroll
    for (int k = 0; k < LIVE; ++k) v[k] = v[k] * 0.5f + v[(k + 1) % LIVE] * 0.25f;
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < LIVE; ++k) sum += v[k] * (float)(k + 1);
  if (i < n) y[i] = sum;
}
