// A marlin-style tile step that needs sm_80 (cp.async, ldmatrix, mma.sync
// m16n8k16), in three forms chosen by a macro:
//   MARLIN_GUARD_THROW  a TORCH_CHECK-style throw in the kernel, as torchao had:
//                       device code cannot throw, so no arch builds at all;
//   MARLIN_GUARD_TRAP   a run-time check only: the sm_80 instructions are still
//                       emitted for sm_75, and ptxas refuses them;
//   MARLIN_GUARD_ARCH   the upstream fix: an empty body below __CUDA_ARCH__ 800,
//                       with the capability checked on the host.
#include <cuda_fp16.h>

struct UnsupportedArch {};

__device__ inline void cp_async_16(void* smem, const void* gmem) {
  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(addr), "l"(gmem));
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 0;\n" ::);
}

__device__ inline void ldmatrix_x4(unsigned (&frag)[4], const void* smem) {
  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(frag[0]), "=r"(frag[1]), "=r"(frag[2]), "=r"(frag[3])
               : "r"(addr));
}

__device__ inline void ldmatrix_x2(unsigned (&frag)[2], const void* smem) {
  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(frag[0]), "=r"(frag[1])
               : "r"(addr));
}

__device__ inline void mma_m16n8k16(float (&acc)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

extern "C" __global__ void marlin_like(const __half* a, const __half* b, float* c, int arch) {
#if defined(MARLIN_GUARD_THROW)
  if (arch < 800) throw UnsupportedArch();
#elif defined(MARLIN_GUARD_TRAP)
  if (arch < 800) __trap();
#endif
#if defined(MARLIN_GUARD_ARCH) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  (void)a; (void)b; (void)c; (void)arch;
#else
  __shared__ alignas(16) __half sa[16 * 16];
  __shared__ alignas(16) __half sb[16 * 8];
  int lane = threadIdx.x;
  cp_async_16(&sa[lane * 8], &a[lane * 8]);
  if (lane < 16) cp_async_16(&sb[lane * 8], &b[lane * 8]);
  __syncthreads();
  // A is 16x16 row-major; B is stored n-major (8 rows of 16 k values); C is 16x8.
  unsigned fa[4], fb[2];
  ldmatrix_x4(fa, &sa[(lane % 16) * 16 + (lane / 16) * 8]);
  ldmatrix_x2(fb, &sb[(lane % 8) * 16 + ((lane / 8) % 2) * 8]);
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  mma_m16n8k16(acc, fa, fb);
  const int row = lane / 4, col = 2 * (lane % 4);
  c[row * 8 + col] = acc[0];
  c[row * 8 + col + 1] = acc[1];
  c[(row + 8) * 8 + col] = acc[2];
  c[(row + 8) * 8 + col + 1] = acc[3];
#endif
}
