__global__ void add(float *x) { x[threadIdx.x] += 1.0f; }
