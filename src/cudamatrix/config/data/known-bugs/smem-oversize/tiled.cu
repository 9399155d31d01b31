// A 64x64-tiled matrix product whose static shared memory is 16 bytes over
// the 48 KiB (0xc000) per-block limit: three 64x64 float tiles are exactly
// 48 KiB, and a small per-block scale table adds 0x10 bytes. The table is
// indexed by input data, so the compiler cannot fold it away.
//   SMEM_STATIC   (buggy) all of it static: 0xc010 bytes
//   SMEM_DYNAMIC  (fixed) the tiles in dynamic shared memory, sized at launch
//                 with cudaFuncAttributeMaxDynamicSharedMemorySize raised
#define TILE 64

extern "C" __global__ void tiled_matmul(const float* a, const float* b, float* c,
                                        const int* scale_index, int n) {
#if defined(SMEM_DYNAMIC)
  extern __shared__ float dynamic_smem[];
  float (*ta)[TILE] = reinterpret_cast<float (*)[TILE]>(dynamic_smem);
  float (*tb)[TILE] = reinterpret_cast<float (*)[TILE]>(dynamic_smem + TILE * TILE);
  float (*tc)[TILE] = reinterpret_cast<float (*)[TILE]>(dynamic_smem + 2 * TILE * TILE);
  __shared__ float scale[4];
#else
  __shared__ float ta[TILE][TILE];
  __shared__ float tb[TILE][TILE];
  __shared__ float tc[TILE][TILE];
  __shared__ float scale[4];
#endif
  const int tx = threadIdx.x, ty = threadIdx.y;  // 16 x 16 threads, 4x4 outputs each
  const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
  if (tx < 4 && ty == 0) scale[tx] = 1.0f + tx;
  for (int i = ty; i < TILE; i += 16)
    for (int j = tx; j < TILE; j += 16) tc[i][j] = 0.0f;
  for (int k0 = 0; k0 < n; k0 += TILE) {
    for (int i = ty; i < TILE; i += 16)
      for (int j = tx; j < TILE; j += 16) {
        ta[i][j] = (row0 + i < n && k0 + j < n) ? a[(row0 + i) * n + k0 + j] : 0.0f;
        tb[i][j] = (k0 + i < n && col0 + j < n) ? b[(k0 + i) * n + col0 + j] : 0.0f;
      }
    __syncthreads();
    for (int i = ty; i < TILE; i += 16)
      for (int j = tx; j < TILE; j += 16) {
        float sum = 0.0f;
        for (int k = 0; k < TILE; ++k) sum += ta[i][k] * tb[k][j];
        tc[i][j] += sum;
      }
    __syncthreads();
  }
  const float s = scale[scale_index[blockIdx.x & 3] & 3];
  for (int i = ty; i < TILE; i += 16)
    for (int j = tx; j < TILE; j += 16)
      if (row0 + i < n && col0 + j < n) c[(row0 + i) * n + col0 + j] = tc[i][j] * s;
}
