// Each library's handle made and released: the link needs libcublas, libcublasLt and
// libcurand, and the module one kernel for the audit of what the build ships.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <curand.h>

__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }

extern "C" int make_handles() {
  cublasHandle_t blas;
  cublasLtHandle_t lt;
  curandGenerator_t generator;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) return 1;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return 2;
  if (curandCreateGenerator(&generator, CURAND_RNG_PSEUDO_DEFAULT) != CURAND_STATUS_SUCCESS)
    return 3;
  curandDestroyGenerator(generator);
  cublasLtDestroy(lt);
  cublasDestroy(blas);
  return 0;
}
