// The extension's Python binding, as a setup.py's CUDAExtension compiles it (g++).
#include <torch/extension.h>

torch::Tensor scale_cuda(torch::Tensor x, double factor);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scale", &scale_cuda, "x * factor on the GPU");
}
