/* bench_pause SECONDS: how long the machine takes the CPU away from a
 * thread that never blocks.  It reads the monotonic clock in a tight loop
 * and counts the gaps between two reads over 0.1 ms and over 1 ms, and the
 * longest.  On a virtual machine the hypervisor, and on any machine
 * interrupts and other tasks, stop a thread for that long whatever it
 * does; a load generator's send lag cannot be better than this floor
 * (bench/run.sh section g prints it beside the send lag figures).
 * Prints one line: "over_0.1ms over_1ms max_ms". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 3;
  if (!(secs > 0)) {
    fprintf(stderr, "usage: bench_pause SECONDS\n");
    return 2;
  }
  uint64_t prev = now_ns(), end = prev + (uint64_t)(secs * 1e9), longest = 0;
  unsigned long over_100us = 0, over_1ms = 0;
  for (uint64_t t = prev; t < end; prev = t) {
    t = now_ns();
    uint64_t gap = t - prev;
    over_100us += gap > 100000;
    over_1ms += gap > 1000000;
    if (gap > longest) longest = gap;
  }
  printf("%lu %lu %.3f\n", over_100us, over_1ms, (double)longest / 1e6);
  return 0;
}
