#error bell  escape [31m red | col | injected | [/bold]
extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }
