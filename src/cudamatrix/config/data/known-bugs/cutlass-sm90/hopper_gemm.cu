// A CUTLASS 3.x Hopper GEMM: fp16 A (row-major) x fp16 B (column-major) -> fp32,
// built by the CollectiveBuilder with the TMA warp-specialized schedule, which
// issues WGMMA and TMA instructions. Those exist only for sm_90a: built for
// plain sm_90, CUTLASS leaves them out, the build succeeds, and the kernel
// traps at run time ("Arch conditional MMA instruction used without targeting
// sm90a"). With REQUIRE_SM90A the plain-sm_90 build stops at compile time.
#if defined(REQUIRE_SM90A) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && \
    !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "hopper_gemm uses WGMMA and TMA: build for sm_90a (-gencode arch=compute_90a,code=sm_90a)"
#endif

#include <cuda_fp16.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

using namespace cute;

using ElementA = cutlass::half_t;
using ElementB = cutlass::half_t;
using ElementC = float;
using ElementAccumulator = float;
using LayoutA = cutlass::layout::RowMajor;
using LayoutB = cutlass::layout::ColumnMajor;
using LayoutC = cutlass::layout::RowMajor;
constexpr int AlignmentA = 128 / cutlass::sizeof_bits<ElementA>::value;
constexpr int AlignmentB = 128 / cutlass::sizeof_bits<ElementB>::value;
constexpr int AlignmentC = 128 / cutlass::sizeof_bits<ElementC>::value;

using TileShape = Shape<_128, _128, _64>;
using ClusterShape = Shape<_1, _1, _1>;

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator,
    ElementC, LayoutC, AlignmentC, ElementC, LayoutC, AlignmentC,
    cutlass::epilogue::collective::EpilogueScheduleAuto>::CollectiveOp;

using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, AlignmentA,
    ElementB, LayoutB, AlignmentB, ElementAccumulator, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    cutlass::gemm::KernelTmaWarpSpecialized>::CollectiveOp;

using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>,
                                                        CollectiveMainloop, CollectiveEpilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

// D = A x B for row-major A (m x k), column-major B (k x n), row-major D (m x n).
// Returns 0 on success, else the cutlass::Status code.
extern "C" int hopper_gemm(const void* a, const void* b, float* d, int m, int n, int k) {
  auto stride_a = cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideA{},
                                                   cute::make_shape(m, k, 1));
  auto stride_b = cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideB{},
                                                   cute::make_shape(n, k, 1));
  auto stride_c = cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideC{},
                                                   cute::make_shape(m, n, 1));
  auto stride_d = cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideD{},
                                                   cute::make_shape(m, n, 1));
  typename Gemm::Arguments arguments{
      cutlass::gemm::GemmUniversalMode::kGemm,
      {m, n, k, 1},
      {static_cast<const ElementA*>(a), stride_a, static_cast<const ElementB*>(b), stride_b},
      {{1.0f, 0.0f}, d, stride_c, d, stride_d}};
  Gemm gemm;
  cutlass::Status status = gemm.can_implement(arguments);
  if (status != cutlass::Status::kSuccess) return static_cast<int>(status);
  status = gemm.initialize(arguments, nullptr);
  if (status != cutlass::Status::kSuccess) return static_cast<int>(status);
  status = gemm.run();
  return static_cast<int>(status);
}
