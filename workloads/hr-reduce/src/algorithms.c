/* The reduce algorithms of S-Caffe Sec. 5: binomial tree, chunked chain, and the
 * two-level chain-binomial / chain-chain designs. Every function sums `count` floats of
 * `buf` over `comm` into `buf` on rank 0 of `comm`; `buf` is a working copy the caller
 * owns (other ranks' contents are clobbered), `tmp` is scratch of the same length; both are
 * buffers of buffers.c, added by hr_buf_add (on the GPU for device buffers). */
#include "hr_reduce.h"

#include <stdlib.h>

/* Element range of chunk j when `count` elements are cut into `n` near-equal chunks;
 * the first count % n chunks get one element more, so no size needs to divide by n. */
static void chunk_range(size_t count, int n, int j, size_t *off, size_t *len)
{
    size_t base = count / (size_t)n, extra = count % (size_t)n;
    size_t jj = (size_t)j;
    *off = jj * base + (jj < extra ? jj : extra);
    *len = base + (jj < extra ? 1 : 0);
}

void hr_binomial(MPI_Comm comm, float *buf, float *tmp, size_t count)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int mask = 1; mask < size; mask <<= 1) {
        if (rank & mask) {
            hr_send(buf, count, rank - mask, 0, comm);
            return;
        }
        if (rank + mask < size) {
            hr_recv(tmp, count, rank + mask, 0, comm);
            hr_buf_add(buf, tmp, count);
        }
    }
}

/* Chunked chain: the last rank sends chunk after chunk to its left neighbour; each rank
 * adds its own chunk and forwards it, so chunk j+1 travels while chunk j is reduced.
 * All receives are posted up front and sends are non-blocking (the pipeline). */
void hr_chain(MPI_Comm comm, float *buf, float *tmp, size_t count, int nchunks)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (size == 1 || count == 0)
        return;
    int n = nchunks;
    if ((size_t)n > count)
        n = (int)count; /* never an empty chunk */
    MPI_Request *rreq = malloc(sizeof(MPI_Request) * (size_t)n);
    MPI_Request *sreq = malloc(sizeof(MPI_Request) * (size_t)n);
    if (!rreq || !sreq)
        hr_die(comm, "out of memory for %d chunk requests", n);
    int last = (rank == size - 1);
    for (int j = 0; j < n; j++) {
        size_t off, len;
        chunk_range(count, n, j, &off, &len);
        if (!last)
            hr_irecv(tmp + off, len, rank + 1, j, comm, &rreq[j]);
        else
            rreq[j] = MPI_REQUEST_NULL;
    }
    for (int j = 0; j < n; j++) {
        size_t off, len;
        chunk_range(count, n, j, &off, &len);
        if (!last) {
            MPI_Wait(&rreq[j], MPI_STATUS_IGNORE);
            hr_buf_add(buf + off, tmp + off, len);
        }
        if (rank > 0)
            hr_isend(buf + off, len, rank - 1, j, comm, &sreq[j]);
        else
            sreq[j] = MPI_REQUEST_NULL;
    }
    MPI_Waitall(n, sreq, MPI_STATUSES_IGNORE);
    free(rreq);
    free(sreq);
}

int hr_two_level_setup(MPI_Comm comm, int chain, struct hr_levels *lv)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (chain < 1 || chain > size)
        return -1;
    lv->chain = chain;
    /* the lower level: runs of `chain` consecutive ranks, which may span nodes;
     * its rank 0 is the group's leader, and the leaders form the upper level */
    MPI_Comm_split(comm, rank / chain, rank % chain, &lv->lower);
    int leader = (rank % chain == 0);
    MPI_Comm_split(comm, leader ? 0 : MPI_UNDEFINED, rank, &lv->upper);
    return 0;
}

void hr_two_level_free(struct hr_levels *lv)
{
    if (lv->lower != MPI_COMM_NULL)
        MPI_Comm_free(&lv->lower);
    if (lv->upper != MPI_COMM_NULL)
        MPI_Comm_free(&lv->upper);
}

void hr_two_level(const struct hr_levels *lv, enum hr_upper upper, float *buf, float *tmp,
                  size_t count, int nchunks)
{
    hr_chain(lv->lower, buf, tmp, count, nchunks);
    if (lv->upper == MPI_COMM_NULL)
        return;
    if (upper == HR_UPPER_BINOMIAL)
        hr_binomial(lv->upper, buf, tmp, count);
    else
        hr_chain(lv->upper, buf, tmp, count, nchunks);
}
