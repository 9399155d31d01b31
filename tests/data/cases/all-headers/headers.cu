// Includes every header a real kernel commonly reaches for; compiles to nothing
// interesting, it only has to find each one.
#include <cuda/pipeline>
#include <cuda/barrier>
#include <nv/target>
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#include <cuda/std/atomic>

extern "C" __global__ void touch(float *out) {
    namespace cg = cooperative_groups;
    cg::thread_block block = cg::this_thread_block();
    cuda::std::atomic<int> counter{0};
    __half h = __float2half(1.0f);
    __nv_bfloat16 b = __float2bfloat16(2.0f);
    out[block.thread_rank()] = __half2float(h) + __bfloat162float(b) + counter.load();
}
