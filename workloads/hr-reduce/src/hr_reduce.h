#ifndef HR_REDUCE_H
#define HR_REDUCE_H

#include <mpi.h>
#include <stddef.h>

#define HR_VERSION "1.0"

enum hr_upper { HR_UPPER_BINOMIAL, HR_UPPER_CHAIN };

/* Two-level communicators: `lower` chains of `chain` consecutive ranks, `upper` their
 * leaders (MPI_COMM_NULL on the other ranks). */
struct hr_levels {
    int chain;
    MPI_Comm lower;
    MPI_Comm upper;
};

void hr_binomial(MPI_Comm comm, float *buf, float *tmp, size_t count);
void hr_chain(MPI_Comm comm, float *buf, float *tmp, size_t count, int nchunks);
int hr_two_level_setup(MPI_Comm comm, int chain, struct hr_levels *lv);
void hr_two_level_free(struct hr_levels *lv);
void hr_two_level(const struct hr_levels *lv, enum hr_upper upper, float *buf, float *tmp,
                  size_t count, int nchunks);

/* point-to-point on float runs, with the int-count limit of MPI checked */
void hr_send(const float *buf, size_t count, int dest, int tag, MPI_Comm comm);
void hr_recv(float *buf, size_t count, int src, int tag, MPI_Comm comm);
void hr_isend(const float *buf, size_t count, int dest, int tag, MPI_Comm comm, MPI_Request *req);
void hr_irecv(float *buf, size_t count, int src, int tag, MPI_Comm comm, MPI_Request *req);

/* Reduce buffers (buffers.c): host memory in a CPU build; in a CUDA build device memory
 * (cudaMalloc, moved by a CUDA-aware MPI, added on the GPU) or managed memory (the fallback
 * for an MPI that is not CUDA-aware, added on the host). */
enum hr_memory { HR_MEM_HOST, HR_MEM_DEVICE, HR_MEM_MANAGED };

/* Choose the buffers for --gpu-buffers `request` (device, managed, auto; NULL: the build's
 * default), the same on every rank. 0 on success; else `why` says why it is refused. */
int hr_buffers_select(const char *request, char *why, size_t why_len);
enum hr_memory hr_buffers_memory(void);
const char *hr_buffers_description(void); /* for the '# Buffers:' header line */
const char *hr_buffers_fallback(void);    /* auto's reason for managed memory, else NULL */

float *hr_buf_alloc(size_t count);
void hr_buf_free(float *buf);
void hr_buf_add(float *dst, const float *src, size_t count);          /* dst += src */
void hr_buf_copy(float *dst, const float *src, size_t count);         /* buffer to buffer */
void hr_buf_upload(float *dst, const float *host, size_t count);      /* host to buffer */
void hr_buf_download(float *host, const float *src, size_t count);    /* buffer to host */

/* print the message on rank `comm`'s stderr and abort the whole job with status 2 */
void hr_die(MPI_Comm comm, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

#endif
