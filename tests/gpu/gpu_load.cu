// A GPU job for `make test-gpu`'s monitor check: it holds MiB of device memory and keeps the GPU
// busy for SECONDS, so that the monitor has a job's pid with GPU memory and a busy GPU to see.
// usage: gpu_load [MiB] [SECONDS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void spin(float *data, size_t n, int rounds) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) {
    float x = data[i];
    for (int r = 0; r < rounds; ++r) x = x * 0.999f + 1.0f;
    data[i] = x;
  }
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], nullptr, 10) : 2048;
  double seconds = argc > 2 ? atof(argv[2]) : 10.0;
  size_t n = mib * (size_t(1) << 20) / sizeof(float);
  float *data = nullptr;
  cudaError_t err = cudaMalloc(&data, n * sizeof(float));
  if (err != cudaSuccess) {
    fprintf(stderr, "gpu_load: cudaMalloc of %zu MiB failed: %s\n", mib, cudaGetErrorString(err));
    return 1;
  }
  cudaMemset(data, 0, n * sizeof(float));
  auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    spin<<<(unsigned)((n + 255) / 256), 256>>>(data, n, 256);
    err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
      fprintf(stderr, "gpu_load: kernel failed: %s\n", cudaGetErrorString(err));
      return 1;
    }
  }
  cudaFree(data);
  printf("gpu_load: held %zu MiB for %.0f s\n", mib, seconds);
  return 0;
}
