// out = a + b for float32 NumPy arrays, on the GPU, as a pybind11 module.
#include <cuda_runtime.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

namespace py = pybind11;

__global__ void add(const float *a, const float *b, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

static void check(cudaError_t status) {
  if (status != cudaSuccess) throw std::runtime_error(cudaGetErrorString(status));
}

py::array_t<float> vecadd(py::array_t<float, py::array::c_style> a,
                          py::array_t<float, py::array::c_style> b) {
  if (a.size() != b.size()) throw std::invalid_argument("sizes differ");
  const int n = static_cast<int>(a.size());
  py::array_t<float> out(n);
  float *da, *db, *dout;
  check(cudaMalloc(&da, n * sizeof(float)));
  check(cudaMalloc(&db, n * sizeof(float)));
  check(cudaMalloc(&dout, n * sizeof(float)));
  check(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  check(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  add<<<(n + 255) / 256, 256>>>(da, db, dout, n);
  check(cudaGetLastError());
  check(cudaMemcpy(out.mutable_data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
  return out;
}

PYBIND11_MODULE(vecadd, m) { m.def("vecadd", &vecadd, "a + b on the GPU"); }
