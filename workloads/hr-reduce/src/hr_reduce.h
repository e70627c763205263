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

/* print the message on rank `comm`'s stderr and abort the whole job with status 2 */
void hr_die(MPI_Comm comm, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

#endif
