/* The one clock cairn times things with. */
#ifndef CAIRN_CLOCK_H
#define CAIRN_CLOCK_H

/* Seconds on the monotonic clock (for intervals; not wall time). */
double clock_now(void);
/* Sleep the whole interval, resuming after signal handlers. */
void clock_sleep(double seconds);

#endif
