// FlashInfer's rotary-embedding header as a project using it includes it: pos_enc.cuh
// reaches fastdiv.cuh, which uses libcu++'s <cuda/cmath> and cuda::fast_mod_div, newer
// than the CCCL some toolkits ship. Which CCCL release first builds it is the question.
#include <flashinfer/pos_enc.cuh>

__global__ void touch(float* x) { x[threadIdx.x] += 1.0f; }
