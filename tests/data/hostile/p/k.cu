extern "C" __global__ void k(float* x) { x[threadIdx.x] *= undefined_name; }
