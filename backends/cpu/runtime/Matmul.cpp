//===- Matmul.cpp - Matrix products on oneDNN -----------------------------===//
//
// dpc_matmul, batched and transposed, on oneDNN's sgemm; dpc_matmul_bf16 on
// its matmul primitive (this sgemm has no bf16 form) with the operands
// converted once, where the CPU computes bf16 natively (bf16Native, which
// convolutions ask too) and in f32 elsewhere.
//
//===----------------------------------------------------------------------===//

#include "backends/cpu/runtime/Internal.h"

#include "dpc/runtime/Bf16.h"

#include <map>
#include <mutex>

using namespace dpc::cpu;

namespace dpc::cpu {

bool bf16Native() {
  static const bool native = [] {
    dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_bf16 ||
           isa == dnnl::cpu_isa::avx512_core_amx;
  }();
  return native;
}

Precision effective(Precision precision) {
  return precision == Precision::Bf16 && bf16Native() ? Precision::Bf16
                                                      : Precision::F32;
}

} // namespace dpc::cpu

namespace {

/// A bf16 x bf16 -> f32 product y = op(a) op(b) (+ y with `sum`), on
/// oneDNN's matmul primitive: this oneDNN's sgemm has no bf16 form. The
/// transposes are strides of the operands' descriptors.
dnnl::matmul &bf16Matmul(int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                         bool sum) {
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, dnnl::matmul> cache;
  std::vector<int64_t> key = {m, n, k, ta, tb, sum};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;
  dnnl::memory::desc a({m, k}, dt::bf16, ta ? dims{1, m} : dims{k, 1});
  dnnl::memory::desc b({k, n}, dt::bf16, tb ? dims{1, k} : dims{n, 1});
  dnnl::memory::desc c({m, n}, dt::f32, dims{n, 1});
  dnnl::primitive_attr attr;
  if (sum) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine());
  return cache.emplace(std::move(key), dnnl::matmul(pd)).first->second;
}

/// `count` floats as bf16, into a buffer kept per thread between calls.
const uint16_t *toBf16(const float *src, int64_t count,
                       std::vector<uint16_t> &buffer) {
  if (int64_t(buffer.size()) < count)
    buffer.resize(size_t(count));
  uint16_t *dst = buffer.data();
  parallelChunks(count, [&](int64_t begin, int64_t end) {
    dpc::runtime::floatsToBf16(src + begin, dst + begin, end - begin);
  });
  return dst;
}

void matmul(const char *kernel, Precision precision, const float *a,
            const float *b, float *y, int64_t batch, int64_t m, int64_t n,
            int64_t k, int64_t transpose_a, int64_t transpose_b,
            int64_t a_stride, int64_t b_stride, int64_t accumulate) {
  if (batch < 1 || m < 0 || n < 0 || k < 0)
    fail(kernel, "bad sizes batch " + std::to_string(batch) + ", m " +
                     std::to_string(m) + ", n " + std::to_string(n) + ", k " +
                     std::to_string(k));
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    std::fill(y, y + (accumulate ? 1 : batch) * m * n, 0.0f);
    return;
  }
  if (effective(precision) == Precision::Bf16) {
    // Operands are converted whole (a shared one, stride 0, once), then each
    // batch runs on the converted copies at the same offsets.
    thread_local std::vector<uint16_t> aBuffer, bBuffer;
    const uint16_t *a16 = toBf16(a, (batch - 1) * a_stride + m * k, aBuffer);
    const uint16_t *b16 = toBf16(b, (batch - 1) * b_stride + k * n, bBuffer);
    try {
      dnnl::matmul &first =
          bf16Matmul(m, n, k, transpose_a, transpose_b, false);
      dnnl::matmul *summing =
          accumulate && batch > 1
              ? &bf16Matmul(m, n, k, transpose_a, transpose_b, true)
              : nullptr;
      dnnl::memory::desc aDesc({m, k}, dt::bf16,
                               transpose_a ? dims{1, m} : dims{k, 1});
      dnnl::memory::desc bDesc({k, n}, dt::bf16,
                               transpose_b ? dims{1, k} : dims{n, 1});
      dnnl::memory::desc cDesc({m, n}, dt::f32, dims{n, 1});
      for (int64_t i = 0; i < batch; ++i) {
        float *out = accumulate ? y : y + i * m * n;
        dnnl::matmul &prim = accumulate && i > 0 ? *summing : first;
        prim.execute(stream(),
                     {{DNNL_ARG_SRC, mem(aDesc, a16 + i * a_stride)},
                      {DNNL_ARG_WEIGHTS, mem(bDesc, b16 + i * b_stride)},
                      {DNNL_ARG_DST, mem(cDesc, out)}});
      }
      stream().wait();
    } catch (const dnnl::error &e) {
      fail(kernel, std::string("oneDNN: ") + e.what());
    }
    return;
  }
  // oneDNN's sgemm is row-major, like the ABI's buffers.
  char ta = transpose_a ? 'T' : 'N', tb = transpose_b ? 'T' : 'N';
  int64_t lda = transpose_a ? m : k, ldb = transpose_b ? k : n;
  for (int64_t i = 0; i < batch; ++i) {
    float beta = accumulate && i > 0 ? 1.0f : 0.0f;
    float *out = accumulate ? y : y + i * m * n;
    dnnl_status_t status = dnnl_sgemm(ta, tb, m, n, k, 1.0f, a + i * a_stride,
                                      lda, b + i * b_stride, ldb, beta, out, n);
    if (status != dnnl_success)
      fail(kernel,
           "dnnl_sgemm failed with status " + std::to_string(int(status)));
  }
}

} // namespace

extern "C" {

void dpc_matmul(const float *a, const float *b, float *y, int64_t batch,
                int64_t m, int64_t n, int64_t k, int64_t transpose_a,
                int64_t transpose_b, int64_t a_stride, int64_t b_stride,
                int64_t accumulate) {
  matmul("dpc_matmul", Precision::F32, a, b, y, batch, m, n, k, transpose_a,
         transpose_b, a_stride, b_stride, accumulate);
}

void dpc_matmul_bf16(const float *a, const float *b, float *y, int64_t batch,
                     int64_t m, int64_t n, int64_t k, int64_t transpose_a,
                     int64_t transpose_b, int64_t a_stride, int64_t b_stride,
                     int64_t accumulate) {
  matmul("dpc_matmul_bf16", Precision::Bf16, a, b, y, batch, m, n, k,
         transpose_a, transpose_b, a_stride, b_stride, accumulate);
}

int64_t dpc_bf16_native(void) { return bf16Native(); }

} // extern "C"
