// The smallest useful kernel, for the driver axis: its PTX is loaded through
// the driver's JIT, which accepts PTX only up to the ISA version of the CUDA
// release the driver supports.
extern "C" __global__ void saxpy(float alpha, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i];
}
