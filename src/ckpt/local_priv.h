/* Private to src/ckpt: the node-local tier's part files and what its
 * readers share (ckpt_local.c, local_manifest.c, local_resplit.c). */
#ifndef CAIRN_LOCAL_PRIV_H
#define CAIRN_LOCAL_PRIV_H

#include "cairn/ckpt_local.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define PART_MAGIC "CAIRNLP1"
#define PART_VERSION 1
#define CHUNK ((size_t)16 << 20) /* bytes per message of a part */
#define TAG_PARTNER 0x4c50
#define TAG_RESTORE 0x4c52

/* A part's header, then n_blobs records, then the blobs' bytes.  Sizes
 * are multiples of 8, so the header checksums as 8-byte words. */
struct part_head {
    char magic[8];
    uint32_t version, n_blobs;
    int64_t epoch, step, done, rank, world;
    char identity[17];
    char pad[7];
    uint64_t data_bytes, data_sum; /* the data as 4-byte words, indexed from 0 */
    uint64_t head_sum;             /* of the header (head_sum 0) and the records */
};

struct part_rec {
    int32_t blob, dtype, ndim, pad;
    int64_t dims[CAIRN_MAX_DIMS];
    uint64_t bytes;
};

/* This rank's part of one checkpoint: the header and records (one
 * buffer), and the tensors the data comes from or goes to. */
struct part {
    char *head; /* struct part_head, then the records */
    size_t head_bytes;
    struct tensor **t; /* n_blobs of them, in record order */
    int n;
    uint64_t total; /* head_bytes + data */
};

/* Which copy of a part a rank offers: the smallest key wins (KEY_NONE:
 * none); copies set aside, by kind. */
#define KEY_NONE LLONG_MAX
enum { EXCL_OWN = 1, EXCL_PARTNER = 2 };

/* Messages of a buffer, CHUNK bytes each at most (lp_post). */
struct posts {
    MPI_Request *req;
    int *sizes;
    int n;
};

int lp_node_count(const struct placement_nodes *n, int k);
/* ROOT/NAME/KINDrrrrrr ("rank" or "partner"). */
int lp_part_path(char *out, size_t size, const char *root, const char *name, const char *kind, int r);
/* 0 if the copy at path is rank r's part as the manifest lists it, else
 * CAIRN_ECORRUPT saying why. */
int lp_check_copy(const char *path, int r, const struct ckpt_local_manifest *man);
/* A whole file that must have `bytes` bytes, into a new buffer. */
int lp_read_file(const char *path, uint64_t bytes, char **out);
/* The checksum of a part's header and records (head_sum taken as 0). */
uint64_t lp_head_sum(char *head, size_t head_bytes);
/* Post the messages of bytes at buf to or from peer (room in ps made
 * beforehand); slack: a receive's spare byte, to see a longer message. */
int lp_post(struct posts *ps, char *buf, uint64_t bytes, int peer, bool send, int slack, MPI_Comm comm);
void lp_posts_free(struct posts *ps);
/* Replicated blobs from the group's rank 0 to the others. */
int lp_spread_replicated(const struct ckpt_view *v);

/* local_resplit.c: ckpt_local_read on another layout; and for `ckpt
 * verify`, every part of man found on this node checked as a load checks
 * it (header, records against the settings, checksum), a line each to out;
 * *elsewhere: the parts on other nodes. */
int lp_verify_parts(const char *path, const struct ckpt_local_manifest *man, FILE *out, int *elsewhere);
int lp_resplit(const struct ckpt_view *v, const char (*hosts)[PLACEMENT_HOST_MAX], const char *root,
               const char *name, const struct ckpt_local_manifest *man, struct ckpt_io *io);

#endif
