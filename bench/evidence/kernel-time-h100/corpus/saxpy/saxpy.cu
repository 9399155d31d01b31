// y = a * x + y over n floats, one element per thread: memory-bound, so its time says
// how the L2 state and the arch the module was built for change a streaming kernel.
extern "C" __global__ void saxpy(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
