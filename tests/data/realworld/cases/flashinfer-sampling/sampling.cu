// FlashInfer's sampling header: cuRAND's device API (<curand_kernel.h>,
// <curand_philox4x32_x.h>), CUB and libcu++ in one translation unit, as its JIT build
// compiles the sampling module.
#include <flashinfer/sampling.cuh>

__global__ void uniform(float* out, unsigned long long seed) {
  curandStatePhilox4_32_10_t state;
  curand_init(seed, threadIdx.x, 0, &state);
  out[threadIdx.x] = curand_uniform(&state);
}
