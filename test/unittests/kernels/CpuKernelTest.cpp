//===- CpuKernelTest.cpp - What only the CPU kernels promise --------------===//
//
// Linked into dpc-cpu-kernel-tests beside the conformance suite: the CPU
// target's device is the host, its kernels stop the run with a message on
// bad arguments (the CUDA kernels report through their error handler, and
// write NaN for an embedding index outside the table), its loops give the
// same bits at any OpenMP thread count, and its convolutions keep a
// parameter's filter in oneDNN's layout until the parameter is written. The
// CPU kernels take host pointers, so these tests call them on host vectors.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/kernels/Reference.h"

#include "dpc/runtime/Abi.h"
#include "dpc/runtime/Device.h"
#include "dpc/runtime/ParamEpochs.h"

#include <gtest/gtest.h>

#ifdef DPC_TEST_OPENMP
#include <omp.h>
#endif

#include <cstring>
#include <functional>
#include <memory>
#include <vector>

using namespace dpc::testing;

namespace {

// The rank main takes its memory from the kernel library it is linked with:
// the CPU kernels work on host pointers.
TEST(TargetDevice, IsTheHost) {
  std::unique_ptr<dpc::runtime::Device> d = dpc::runtime::createTargetDevice();
  EXPECT_TRUE(d->hostAccessible());
  EXPECT_EQ(d->description(), "host");
}

//===----------------------------------------------------------------------===//
// Refusals
//===----------------------------------------------------------------------===//

TEST(RefusalDeathTest, CumSumRefusesANegativeSize) {
  float x[1] = {1}, y[1];
  EXPECT_DEATH(dpc_cumsum(x, y, 1, -1, 1, 0, 0),
               "dpc_cumsum: negative size 1 x -1 x 1");
}

TEST(RefusalDeathTest, LrnRefusesAnEmptyWindow) {
  float x[4] = {1, 2, 3, 4}, y[4];
  EXPECT_DEATH(dpc_lrn(x, 1, 4, 1, 0, 1e-4f, 0.75f, 1.0f, y),
               "dpc_lrn: bad sizes n 1, c 4, s 1, size 0");
  EXPECT_DEATH(dpc_lrn_grad(x, x, 1, -4, 1, 3, 1e-4f, 0.75f, 1.0f, y),
               "dpc_lrn_grad: bad sizes n 1, c -4, s 1, size 3");
}

TEST(RefusalDeathTest, BinaryRefusesAnUnknownFunction) {
  int64_t shape[] = {2};
  float a[2] = {1, 2}, y[2];
  EXPECT_DEATH(dpc_binary(7, a, shape, a, shape, y, shape, 1),
               "dpc_binary: unknown function 7");
}

TEST(RefusalDeathTest, BroadcastToRefusesShapesThatDoNotBroadcast) {
  int64_t from[] = {3}, to[] = {4};
  float x[3] = {}, y[4];
  EXPECT_DEATH(dpc_broadcast_to(x, from, y, to, 1, 1.0f),
               "dpc_broadcast_to: cannot broadcast \\[3\\] to \\[4\\]");
}

TEST(RefusalDeathTest, TransposeRefusesAPermutationWithARepeat) {
  int64_t shape[] = {2, 2}, perm[] = {1, 1};
  float x[4] = {}, y[4];
  EXPECT_DEATH(dpc_transpose(x, shape, y, perm, 2),
               "dpc_transpose: not a permutation of 2 dimensions");
}

// Neg's gradient is a neg of dy, built as such: it has no gradient kernel.
TEST(RefusalDeathTest, NegHasNoGradientKernel) {
  float x[3] = {1.5f, -2.0f, 0.0f}, y[3];
  EXPECT_DEATH(dpc_unary_grad(DPC_UNARY_NEG, 0, 0, x, x, y, 3),
               "dpc_unary_grad: unknown function 5");
}

TEST(RefusalDeathTest, BoxOutOfRange) {
  const int64_t whole[1] = {4}, box[1] = {3}, offsets[1] = {2}, steps[1] = {1};
  float x[4] = {}, y[3];
  EXPECT_DEATH(dpc_slice(x, whole, y, box, 1, offsets, steps),
               "dpc_slice: box \\[3\\] out of \\[4\\] in dimension 0");
}

TEST(RefusalDeathTest, ResizeRefusesAnotherBatchOrAnUnknownCode) {
  int64_t from[] = {2, 1, 3}, to[] = {1, 1, 6}, same[] = {2, 1, 6};
  float x[6] = {}, y[12];
  dpc_resize_params params{DPC_RESIZE_LINEAR,
                           DPC_RESIZE_HALF_PIXEL,
                           DPC_RESIZE_FLOOR,
                           {2, 0, 0},
                           {1, 1, 1}};
  EXPECT_DEATH(dpc_resize(x, from, y, to, 3, &params),
               "dpc_resize: cannot resize \\[2,1,3\\] to \\[1,1,6\\]");
  params.mode = 2;
  EXPECT_DEATH(dpc_resize_grad(y, same, x, from, 3, &params),
               "dpc_resize_grad: cannot resize \\[2,1,3\\] to \\[2,1,6\\]");
}

// The output of a transposed convolution is the natural size plus an
// output padding below the stride: 4 rows from 3 by 2 at stride 1 is 1 too
// many.
TEST(RefusalDeathTest, ConvTransposeRefusesAnOutputOfAnotherSize) {
  int64_t x_shape[] = {1, 1, 3, 3}, w_shape[] = {1, 1, 2, 2},
          y_shape[] = {1, 1, 5, 4};
  float x[9] = {}, w[4] = {}, y[20];
  dpc_conv_params params{1, 1, 0, 0, 0, 0, 1, 1, 1, 0};
  EXPECT_DEATH(dpc_conv_transpose2d(x, x_shape, w, w_shape, nullptr, y, y_shape,
                                    &params),
               "dpc_conv_transpose2d: input \\[1,1,3,3\\], filter "
               "\\[1,1,2,2\\]: output \\[1,1,5,4\\] is not the natural "
               "size");
}

TEST(RefusalDeathTest, Conv3dRefusesAnOutputOfAnotherSize) {
  int64_t x_shape[] = {1, 1, 3, 3, 3}, w_shape[] = {1, 1, 2, 2, 2},
          y_shape[] = {1, 1, 2, 2, 3};
  float x[27] = {}, w[8] = {}, y[12];
  dpc_conv3d_params params{1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0};
  EXPECT_DEATH(dpc_conv3d(x, x_shape, w, w_shape, nullptr, y, y_shape, &params),
               "dpc_conv3d: input \\[1,1,3,3,3\\], filter "
               "\\[1,1,2,2,2\\], output \\[1,1,2,2,3\\]: the output "
               "should be \\[1,1,2,2,2\\]");
}

TEST(RefusalDeathTest, LayerNormRefusesAnEmptyRow) {
  Floats x(4), y(4);
  EXPECT_DEATH(
      dpc_layer_norm(x.data(), nullptr, nullptr, 4, 0, 1e-5f, y.data()),
      "dpc_layer_norm: bad sizes rows 4, size 0");
}

TEST(RefusalDeathTest, LstmRefusesAnEmptySequence) {
  Floats x(4), w(8), r(16), h(2), c(2), s(12);
  EXPECT_DEATH(dpc_lstm(x.data(), w.data(), r.data(), nullptr, h.data(),
                        c.data(), 0, 1, 2, 2, 0, s.data()),
               "dpc_lstm: bad sizes steps 0");
}

TEST(RefusalDeathTest, GruRefusesAnEmptyBatch) {
  Floats x(4), w(12), r(12), h(2), s(10);
  EXPECT_DEATH(dpc_gru(x.data(), w.data(), r.data(), nullptr, h.data(), 1, 0, 2,
                       2, 1, 0, s.data()),
               "dpc_gru: bad sizes steps 1, batch 0");
}

TEST(RefusalDeathTest,
     CrossEntropyRefusesALabelOutsideTheClassesThatIsNotIgnored) {
  Floats logits(8, 0.0f), grad(8);
  std::vector<int64_t> labels = {1, -100, -1, 0};
  float loss = 0;
  EXPECT_DEATH(dpc_softmax_cross_entropy_ignore(logits.data(), labels.data(), 4,
                                                2, -100, 1.0f, &loss),
               "label -1 of row 2 is outside \\[0, 2\\)");
  EXPECT_DEATH(dpc_softmax_cross_entropy_ignore_grad(
                   logits.data(), labels.data(), 4, 2, -100, 1.0f, grad.data()),
               "label -1 of row 2 is outside");
}

TEST(RefusalDeathTest, GatherRefusesAnIndexOutsideTheTable) {
  Floats table(6, 1.0f), out(2);
  int64_t indices[] = {1, 3};
  EXPECT_DEATH(dpc_gather(table.data(), indices, 3, 2, 2, out.data()),
               "dpc_gather: index 3 at position 1 is outside the table's 3 "
               "rows");
  int64_t negative[] = {-4};
  EXPECT_DEATH(dpc_gather_grad(out.data(), negative, 3, 2, 1, table.data()),
               "dpc_gather_grad: index -4 at position 0 is outside");
}

TEST(RefusalDeathTest, WhereRefusesShapesThatDoNotBroadcast) {
  uint8_t c[2] = {1, 0};
  float a[3] = {}, y[3];
  int64_t cShape[] = {2}, yShape[] = {3};
  EXPECT_DEATH(dpc_where(c, cShape, a, yShape, a, yShape, y, yShape, 1),
               "dpc_where: \\[2\\] does not broadcast to \\[3\\]");
}

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

#ifdef DPC_TEST_OPENMP
// The kernels' loops over independent outputs run on OpenMP threads once a
// tensor is large (kParallelWork elements); every output is still computed
// by one thread in the serial order, so a thread count changes no bit.
// Inputs of [8, 64, 32, 32] (half a million elements) take the threaded
// paths; the conformance suite checks the values on small cases.
// A filter that is a parameter buffer is reordered into the primitive's
// layout once per epoch: a write the runtime did not mark goes unseen (which
// shows the kept filter is what runs), a marked one is seen, and a buffer
// that is no parameter is read afresh every call. Each kernel that reads a
// filter: direct, bf16 and Winograd, forward and input gradient.
TEST(ConvFilters, AParameterFilterIsReorderedOncePerWrite) {
  using Kernel = std::function<void(const float *w, float *out)>;
  int64_t x_shape[4] = {2, 16, 8, 8}, w_shape[4] = {16, 16, 3, 3};
  dpc_conv_params params = {1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
  Floats x = randomFloats(2 * 16 * 8 * 8, 61);
  size_t outputs = x.size();
  std::vector<std::pair<const char *, Kernel>> kernels = {
      {"dpc_conv2d",
       [&](const float *w, float *y) {
         dpc_conv2d(x.data(), x_shape, w, w_shape, nullptr, y, x_shape,
                    &params);
       }},
      {"dpc_conv2d_bf16",
       [&](const float *w, float *y) {
         dpc_conv2d_bf16(x.data(), x_shape, w, w_shape, nullptr, y, x_shape,
                         &params);
       }},
      {"dpc_conv2d_winograd",
       [&](const float *w, float *y) {
         dpc_conv2d_winograd(x.data(), x_shape, w, w_shape, nullptr, y, x_shape,
                             &params);
       }},
      {"dpc_conv2d_grad_input",
       [&](const float *w, float *dx) {
         dpc_conv2d_grad_input(x.data(), x_shape, w, w_shape, dx, x_shape,
                               &params);
       }},
      {"dpc_conv2d_grad_input_bf16",
       [&](const float *w, float *dx) {
         dpc_conv2d_grad_input_bf16(x.data(), x_shape, w, w_shape, dx, x_shape,
                                    &params);
       }},
      {"dpc_conv2d_grad_input_winograd", [&](const float *w, float *dx) {
         dpc_conv2d_grad_input_winograd(x.data(), x_shape, w, w_shape, dx,
                                        x_shape, &params);
       }}};
  for (auto &[name, kernel] : kernels) {
    SCOPED_TRACE(name);
    Floats w = randomFloats(16 * 16 * 9, 62);
    dpc::runtime::markParamWritten(w.data());
    Floats kept(outputs), fresh(outputs);
    kernel(w.data(), kept.data());
    Floats copy = w;
    kernel(copy.data(), fresh.data());
    EXPECT_EQ(kept, fresh);

    for (float &v : w)
      v *= -2.0f;
    copy = w;
    kernel(w.data(), kept.data());
    kernel(copy.data(), fresh.data());
    EXPECT_NE(kept, fresh) << "an unmarked write of the filter was seen";
    dpc::runtime::markParamWritten(w.data());
    kernel(w.data(), kept.data());
    EXPECT_EQ(kept, fresh) << "a marked write of the filter was not seen";

    dpc::runtime::forgetParamBuffer(w.data());
    for (float &v : w)
      v += 1.0f;
    copy = w;
    kernel(w.data(), kept.data());
    kernel(copy.data(), fresh.data());
    EXPECT_EQ(kept, fresh) << "a forgotten buffer was not read afresh";
  }
}

TEST(Threads, ResultsDoNotDependOnTheThreadCount) {
  const int64_t n = 8, c = 64, h = 32, w = 32, count = n * c * h * w;
  const int64_t shape[4] = {n, c, h, w}, pooled[4] = {n, c, 16, 16};
  const int64_t channel[4] = {1, c, 1, 1}, perm[4] = {0, 2, 3, 1};
  const int64_t permuted[4] = {n, h, w, c};
  const int64_t box[4] = {n, c / 2, h, w - 1}, offsets[4] = {0, 3, 0, 1};
  const int64_t steps[4] = {1, 1, 1, 1};
  const dpc_avg_pool_params pool = {{3, 3, 2, 2, 1, 1, 1, 1}, 1};
  Floats x = randomFloats(size_t(count), 1),
         dy = randomFloats(size_t(count), 2);
  Floats bias = randomFloats(size_t(c), 3),
         scale = randomFloats(size_t(c), 4, 0.5f, 2);
  Floats pooledDy = randomFloats(size_t(n * c * 16 * 16), 5);

  // Every kernel's outputs, concatenated, at the current thread count.
  auto runAll = [&]() {
    std::vector<Floats> out;
    auto add = [&](size_t size, const std::function<void(float *)> &f) {
      out.emplace_back(size);
      f(out.back().data());
    };
    size_t all = size_t(count), planes = size_t(n * c * 16 * 16);
    add(all, [&](float *y) { dpc_relu(x.data(), y, count); });
    add(all, [&](float *y) { dpc_relu_grad(dy.data(), x.data(), y, count); });
    add(all,
        [&](float *y) { dpc_unary(DPC_UNARY_TANH, 0, 0, x.data(), y, count); });
    add(all, [&](float *y) { dpc_clip(x.data(), y, count, -0.5f, 0.5f); });
    add(all, [&](float *y) { dpc_dropout(x.data(), y, count, 0.3f, 77); });
    add(all, [&](float *y) {
      dpc_binary(DPC_BINARY_ADD, x.data(), shape, bias.data(), channel, y,
                 shape, 4);
    });
    add(all, [&](float *y) { dpc_transpose(x.data(), shape, y, perm, 4); });
    add(size_t(n * h * w * c),
        [&](float *y) { dpc_transpose(x.data(), permuted, y, perm, 4); });
    add(size_t(n * (c / 2) * h * (w - 1)), [&](float *y) {
      dpc_slice(x.data(), shape, y, box, 4, offsets, steps);
    });
    add(all, [&](float *y) {
      dpc_insert(x.data(), box, y, shape, 4, offsets, steps, 1, 0.0f);
    });
    add(all, [&](float *y) { dpc_softmax(x.data(), y, n * c, h, w, 0); });
    add(all, [&](float *y) {
      dpc_softmax_grad(dy.data(), x.data(), y, n * c, h, w, 1);
    });
    add(planes, [&](float *y) {
      dpc_max_pool2d(x.data(), shape, y, pooled, &pool.window);
    });
    add(all, [&](float *y) {
      dpc_max_pool2d_grad(pooledDy.data(), pooled, x.data(), shape, y,
                          &pool.window);
    });
    add(planes,
        [&](float *y) { dpc_avg_pool2d(x.data(), shape, y, pooled, &pool); });
    add(all, [&](float *y) {
      dpc_avg_pool2d_grad(pooledDy.data(), pooled, y, shape, &pool);
    });
    add(size_t(n * c),
        [&](float *y) { dpc_global_avg_pool(x.data(), n * c, h * w, y); });
    add(all,
        [&](float *y) { dpc_global_avg_pool_grad(x.data(), n * c, h * w, y); });
    add(size_t(c),
        [&](float *y) { dpc_conv2d_grad_bias(dy.data(), shape, y); });
    Floats stats(size_t(2 * c)), runMean(size_t(c), 0.0f),
        runVar(size_t(c), 1.0f);
    dpc_batch_norm_stats(x.data(), n, c, h * w, 1, runMean.data(),
                         runVar.data(), 0.9f, 1, stats.data());
    out.push_back(stats);
    out.push_back(runMean);
    out.push_back(runVar);
    add(all, [&](float *y) {
      dpc_batch_norm(x.data(), stats.data(), scale.data(), bias.data(), n, c,
                     h * w, 1, 1e-5f, y);
    });
    add(all, [&](float *y) {
      dpc_batch_norm_grad_input(dy.data(), x.data(), stats.data(), scale.data(),
                                n, c, h * w, 1, 1e-5f, y);
    });
    add(size_t(c), [&](float *y) {
      dpc_batch_norm_grad_scale(dy.data(), x.data(), stats.data(), n, c, h * w,
                                1, 1e-5f, y);
    });
    return out;
  };

  int before = omp_get_max_threads();
  omp_set_num_threads(1);
  std::vector<Floats> serial = runAll();
  omp_set_num_threads(4);
  std::vector<Floats> threaded = runAll();
  omp_set_num_threads(before);
  ASSERT_EQ(serial.size(), threaded.size());
  for (size_t k = 0; k < serial.size(); ++k) {
    ASSERT_EQ(serial[k].size(), threaded[k].size());
    EXPECT_EQ(std::memcmp(serial[k].data(), threaded[k].data(),
                          serial[k].size() * sizeof(float)),
              0)
        << "output " << k << " differs with 4 threads";
  }
}
#endif

} // namespace
