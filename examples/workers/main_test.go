package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the test binary as a worker when the example re-executes it
// (run starts os.Executable, which is this binary under go test).
func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		if err := run(context.Background(), os.Stdout, ""); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func TestWorkers(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), &out, exe); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log("\n" + got)
	for _, want := range []string{
		"permits free: 1 of 2, until the dead worker's lease runs out",
		"worker 1: 4 jobs done\n  worker 2: 4 jobs done\n  worker 3: 4 jobs done\n  worker 4: 4 jobs done\n",
		"jobs done: 16;",
		"permits free now: 2 of 2",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	m := regexp.MustCompile(`most running at once: (\d+)`).FindStringSubmatch(got)
	if m == nil {
		t.Fatal("no concurrency reported")
	}
	// Never more than the semaphore's size, across all the processes; and
	// with 16 jobs both permits were used at once at some point.
	if most, _ := strconv.Atoi(m[1]); most != 2 {
		t.Errorf("most running at once = %d, want 2", most)
	}
}
