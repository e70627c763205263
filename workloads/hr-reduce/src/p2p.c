/* Point-to-point helpers and the job-wide fatal error. */
#include "hr_reduce.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void hr_die(MPI_Comm comm, const char *fmt, ...)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hr_reduce: rank %d: ", rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    MPI_Abort(comm, 3);
    exit(3); /* MPI_Abort does not return; this keeps the compiler's noreturn promise */
}

static int as_int(size_t count)
{
    if (count > (size_t)INT_MAX)
        hr_die(MPI_COMM_WORLD, "message of %zu floats exceeds MPI's int count", count);
    return (int)count;
}

void hr_send(const float *buf, size_t count, int dest, int tag, MPI_Comm comm)
{
    MPI_Send(buf, as_int(count), MPI_FLOAT, dest, tag, comm);
}

void hr_recv(float *buf, size_t count, int src, int tag, MPI_Comm comm)
{
    MPI_Recv(buf, as_int(count), MPI_FLOAT, src, tag, comm, MPI_STATUS_IGNORE);
}

void hr_isend(const float *buf, size_t count, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    MPI_Isend(buf, as_int(count), MPI_FLOAT, dest, tag, comm, req);
}

void hr_irecv(float *buf, size_t count, int src, int tag, MPI_Comm comm, MPI_Request *req)
{
    MPI_Irecv(buf, as_int(count), MPI_FLOAT, src, tag, comm, req);
}
