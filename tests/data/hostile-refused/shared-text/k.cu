extern "C" __global__ void k(float* y, float* x) { y[0] = x[0]; }
