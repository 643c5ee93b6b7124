/* The analyzer behind `cairn check` (and the first thing `cairn run` does).
 *
 * Walks the plan in execution order (init, epoch, epoch_end, download,
 * exit), giving every blob an id and a type in its group, and reports as
 * FILE:LINE diagnostics:
 *   - a blob used before any step on its group defines it;
 *   - a blob written by two parallel branches, or read by one while another
 *     writes it;
 *   - a report step that writes what its siblings use, or communicates;
 *   - type, shape and distribution errors from each op's inference;
 *   - download/exit steps reading blobs only epoch tasks make (after a
 *     resume those do not exist: only init's blobs are checkpointed);
 *   - stop blobs that nothing defines.
 * Returns 0 when clean, CAIRN_EINPUT otherwise.  Not collective. */
#ifndef CAIRN_ANALYZE_H
#define CAIRN_ANALYZE_H

struct plan;
struct diags;

int analyze(struct plan *p, struct diags *d);

#endif
