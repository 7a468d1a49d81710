package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// shimSource is an LD_PRELOAD library that adds an offset, in
// nanoseconds, to the wall clock (CLOCK_REALTIME, gettimeofday, time) of
// the process it is loaded into. The offset is read from the file named by
// CHAOS_CLOCK_FILE, at most every 50 ms of real monotonic time, so a
// server's clock can be stepped while it runs. libfaketime is not used: it
// does not work with this redis-server. The monotonic clock is left alone,
// as a real step (NTP, an operator) leaves it.
const shimSource = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*cgt_fn)(clockid_t, struct timespec *);
static cgt_fn real_cgt;
static long long offset_ns, last_read_ns;

static void load(void) {
	if (!real_cgt) real_cgt = (cgt_fn)dlsym(RTLD_NEXT, "clock_gettime");
	struct timespec m;
	real_cgt(CLOCK_MONOTONIC, &m);
	long long n = (long long)m.tv_sec * 1000000000LL + m.tv_nsec;
	if (last_read_ns && n - last_read_ns < 50000000LL) return;
	last_read_ns = n;
	const char *path = getenv("CHAOS_CLOCK_FILE");
	if (!path) return;
	/* open and read, not fopen: fopen allocates, and redis-server's
	   allocator reads the clock while it initialises (a deadlock). */
	int fd = open(path, O_RDONLY);
	if (fd < 0) return;
	char buf[32];
	ssize_t k = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (k <= 0) return;
	buf[k] = 0;
	offset_ns = strtoll(buf, NULL, 10);
}

static void shift(struct timespec *ts) {
	long long n = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns;
	ts->tv_sec = n / 1000000000LL;
	ts->tv_nsec = n % 1000000000LL;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	load();
	int r = real_cgt(id, ts);
	if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) shift(ts);
	return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
	struct timespec ts;
	(void)tz;
	int r = clock_gettime(CLOCK_REALTIME, &ts);
	if (r == 0 && tv) { tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000; }
	return r;
}

time_t time(time_t *t) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t) *t = ts.tv_sec;
	return ts.tv_sec;
}
`

// buildShim compiles the shim with cc into dir and returns its path.
func buildShim(dir string) (string, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	src := filepath.Join(dir, "clockshim.c")
	lib := filepath.Join(dir, "clockshim.so")
	if err := os.WriteFile(src, []byte(shimSource), 0o644); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", lib, src, "-ldl").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("clock shim: cc: %w: %s", err, out)
	}
	return filepath.Abs(lib)
}
