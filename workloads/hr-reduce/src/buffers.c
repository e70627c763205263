/* Where the reduce buffers live and who adds into them (--gpu-buffers).
 *
 * A CUDA build follows S-Caffe (PPoPP'17, Sec. 5): device buffers that a CUDA-aware MPI moves
 * directly, the received chunk added on the GPU. With an MPI that is not CUDA-aware it falls
 * back to managed memory added on the host, which measures page migration instead. */
#include "hr_reduce.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HR_USE_CUDA
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* Open MPI: MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support() */
#endif
#endif
#include "reduce_kernel.h"
#endif

static enum hr_memory g_memory = HR_MEM_HOST;
static char g_description[256] = "host";
static char g_fallback[256];

enum hr_memory hr_buffers_memory(void) { return g_memory; }
const char *hr_buffers_description(void) { return g_description; }
const char *hr_buffers_fallback(void) { return g_fallback[0] ? g_fallback : NULL; }

#ifndef HR_USE_CUDA

int hr_buffers_select(const char *request, char *why, size_t why_len)
{
    if (request && strcmp(request, "auto") != 0) {
        snprintf(why, why_len, "--gpu-buffers %s: this hr_reduce was built without CUDA; rebuild it "
                 "with -DHR_REDUCE_CUDA=ON (needs the CUDA toolkit) on a GPU host", request);
        return -1;
    }
    return 0; /* auto without CUDA: host buffers */
}

#else

static void check_cuda(cudaError_t err, const char *what)
{
    if (err != cudaSuccess)
        hr_die(MPI_COMM_WORLD, "%s: %s", what, cudaGetErrorString(err));
}

/* The MPI library's name and version: its version string up to the first comma or line end. */
static void mpi_name(char *out, size_t len)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int n;
    MPI_Get_library_version(lib, &n);
    lib[strcspn(lib, ",\r\n")] = '\0';
    for (char *p = lib; *p; p++)
        if (*p == '\t')
            *p = ' ';
    snprintf(out, len, "%.96s", lib);
}

/* 1 when the MPI moves device buffers itself; else 0 and `why` says what it lacks. Each MPI
 * says so its own way: Open MPI by MPIX_Query_cuda_support() (mpi-ext.h), MPICH 4 and its
 * derivatives by MPIX_GPU_query_support(), MVAPICH2-GDR (MPICH 3) only by its run-time
 * switch MV2_USE_CUDA=1. */
static int mpi_cuda_aware(char *why, size_t len)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT)
#if MPIX_CUDA_AWARE_SUPPORT
    if (MPIX_Query_cuda_support())
        return 1;
    snprintf(why, len, "its run-time CUDA support is off (MPIX_Query_cuda_support() is 0)");
#else
    snprintf(why, len, "it was built without CUDA (mpi-ext.h: MPIX_CUDA_AWARE_SUPPORT is 0)");
#endif
    return 0;
#elif defined(MPIX_GPU_SUPPORT_CUDA)
    int supported = 0;
    MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported);
    if (supported)
        return 1;
    snprintf(why, len, "MPIX_GPU_query_support() reports no CUDA support (built without CUDA, or "
             "MPIR_CVAR_ENABLE_GPU=0)");
    return 0;
#else
    const char *mv2 = getenv("MV2_USE_CUDA");
    if (mv2 && strcmp(mv2, "1") == 0)
        return 1;
    snprintf(why, len, "it has no CUDA query and MV2_USE_CUDA is not 1 (MVAPICH2-GDR moves device "
             "buffers only with MV2_USE_CUDA=1)");
    return 0;
#endif
}

/* One GPU per rank of a node, round robin over the node's GPUs. */
static int use_local_gpu(char *why, size_t len)
{
    int ngpus = 0;
    cudaError_t err = cudaGetDeviceCount(&ngpus);
    if (err != cudaSuccess || ngpus == 0) {
        snprintf(why, len, "no usable CUDA device (cudaGetDeviceCount: %s)",
                 err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        return -1;
    }
    MPI_Comm node;
    int local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    err = cudaSetDevice(local % ngpus);
    if (err != cudaSuccess) {
        snprintf(why, len, "cudaSetDevice(%d): %s", local % ngpus, cudaGetErrorString(err));
        return -1;
    }
    return 0;
}

/* every rank must take the same path; the first rank that cannot decides for all */
static int all_ranks(int ok)
{
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return ok;
}

int hr_buffers_select(const char *request, char *why, size_t why_len)
{
    const char *want = request ? request : "auto";
    if (!all_ranks(use_local_gpu(why, why_len) == 0)) {
        if (!why[0])
            snprintf(why, why_len, "another rank found no usable CUDA device");
        return -1;
    }
    char name[128], lacks[160] = "";
    mpi_name(name, sizeof name);
    int aware = all_ranks(mpi_cuda_aware(lacks, sizeof lacks));
    if (!aware && !lacks[0])
        snprintf(lacks, sizeof lacks, "another rank's MPI reports no CUDA support");
    if (strcmp(want, "device") == 0 && !aware) {
        snprintf(why, why_len, "--gpu-buffers device: %s is not CUDA-aware: %s. Use a CUDA-aware MPI "
                 "(Open MPI built with CUDA, MVAPICH2-GDR with MV2_USE_CUDA=1, MPICH built with CUDA) "
                 "or --gpu-buffers managed", name, lacks);
        return -1;
    }
    if (strcmp(want, "device") == 0 || (strcmp(want, "auto") == 0 && aware)) {
        g_memory = HR_MEM_DEVICE;
        snprintf(g_description, sizeof g_description,
                 "gpu device (cudaMalloc, CUDA-aware MPI: %s), additions on the GPU", name);
        return 0;
    }
    g_memory = HR_MEM_MANAGED;
    if (strcmp(want, "auto") == 0) {
        snprintf(g_fallback, sizeof g_fallback, "%s is not CUDA-aware: %s", name, lacks);
        snprintf(g_description, sizeof g_description,
                 "gpu managed (cudaMallocManaged; MPI not CUDA-aware: %s), additions on the host", name);
    } else {
        snprintf(g_description, sizeof g_description,
                 "gpu managed (cudaMallocManaged; --gpu-buffers managed), additions on the host");
    }
    return 0;
}

#endif

float *hr_buf_alloc(size_t count)
{
    float *p = NULL;
    size_t bytes = (count ? count : 1) * sizeof(float);
#ifdef HR_USE_CUDA
    cudaError_t err = g_memory == HR_MEM_DEVICE ? cudaMalloc((void **)&p, bytes)
                                                : cudaMallocManaged((void **)&p, bytes, cudaMemAttachGlobal);
    if (err != cudaSuccess)
        hr_die(MPI_COMM_WORLD, "cannot allocate %zu bytes of %s memory: %s", bytes,
               g_memory == HR_MEM_DEVICE ? "device" : "managed", cudaGetErrorString(err));
#else
    p = malloc(bytes);
    if (!p)
        hr_die(MPI_COMM_WORLD, "cannot allocate %zu bytes", bytes);
#endif
    return p;
}

void hr_buf_free(float *buf)
{
#ifdef HR_USE_CUDA
    cudaFree(buf);
#else
    free(buf);
#endif
}

void hr_buf_add(float *dst, const float *src, size_t count)
{
#ifdef HR_USE_CUDA
    if (g_memory == HR_MEM_DEVICE) {
        check_cuda(hr_gpu_add(dst, src, count), "adding on the GPU");
        return;
    }
#endif
    for (size_t i = 0; i < count; i++)
        dst[i] += src[i];
}

/* Device copies are synchronised before returning: MPI reads the buffer next, possibly on
 * another stream. */
static void copy(void *dst, const void *src, size_t count, const char *what)
{
#ifdef HR_USE_CUDA
    if (g_memory == HR_MEM_DEVICE) {
        check_cuda(cudaMemcpy(dst, src, count * sizeof(float), cudaMemcpyDefault), what);
        check_cuda(cudaDeviceSynchronize(), what);
        return;
    }
#endif
    (void)what;
    memcpy(dst, src, count * sizeof(float));
}

void hr_buf_copy(float *dst, const float *src, size_t count) { copy(dst, src, count, "copying on the GPU"); }
void hr_buf_upload(float *dst, const float *host, size_t count) { copy(dst, host, count, "copying to the GPU"); }
void hr_buf_download(float *host, const float *src, size_t count) { copy(host, src, count, "copying from the GPU"); }
