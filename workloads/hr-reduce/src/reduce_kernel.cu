/* S-Caffe's reduce adds each received chunk into the local one on the GPU (PPoPP'17, Sec. 5). */
#include "reduce_kernel.h"

#define THREADS 256
#define MAX_BLOCKS 4096 /* a grid-stride loop covers any count with a bounded grid */

__global__ static void add_kernel(float *dst, const float *src, size_t count)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        dst[i] += src[i];
}

extern "C" cudaError_t hr_gpu_add(float *dst, const float *src, size_t count)
{
    if (count == 0)
        return cudaSuccess;
    size_t blocks = (count + THREADS - 1) / THREADS;
    add_kernel<<<blocks < MAX_BLOCKS ? (unsigned)blocks : MAX_BLOCKS, THREADS>>>(dst, src, count);
    cudaError_t err = cudaGetLastError();
    return err != cudaSuccess ? err : cudaDeviceSynchronize();
}
