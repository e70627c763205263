/* The GPU side of the reduce (reduce_kernel.cu), callable from C. */
#ifndef HR_REDUCE_KERNEL_H
#define HR_REDUCE_KERNEL_H

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] += src[i] for `count` floats of device memory; returns once the sum is complete,
 * because the caller hands `dst` to MPI next. */
cudaError_t hr_gpu_add(float *dst, const float *src, size_t count);

#ifdef __cplusplus
}
#endif

#endif
