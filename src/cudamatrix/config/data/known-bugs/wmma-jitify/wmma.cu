// A 16x16x16 half -> float matrix product on tensor cores through WMMA.
// NVRTC compiles it only when an arch of sm_70 or newer reaches the
// preprocessor: <mma.h> defines nvcuda::wmma under __CUDA_ARCH__ >= 700.
#include <mma.h>

extern "C" __global__ void wmma_16x16x16(const __half* a, const __half* b, float* c) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a_frag;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b_frag;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c_frag;
  wmma::fill_fragment(c_frag, 0.0f);
  wmma::load_matrix_sync(a_frag, a, 16);
  wmma::load_matrix_sync(b_frag, b, 16);
  wmma::mma_sync(c_frag, a_frag, b_frag, c_frag);
  wmma::store_matrix_sync(c, c_frag, 16, wmma::mem_row_major);
}
