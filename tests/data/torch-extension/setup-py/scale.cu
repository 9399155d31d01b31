// A PyTorch CUDA extension's kernel: out = x * factor, for float tensors on the GPU.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void scale_kernel(const float* x, float* out, float factor, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = x[i] * factor;
}

torch::Tensor scale_cuda(torch::Tensor x, double factor) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "x: a float CUDA tensor");
  auto input = x.contiguous();
  auto out = torch::empty_like(input);
  int64_t n = input.numel();
  int threads = 256;
  int blocks = static_cast<int>((n + threads - 1) / threads);
  scale_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      input.data_ptr<float>(), out.data_ptr<float>(), static_cast<float>(factor), n);
  return out;
}
