package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if id := os.Getenv(childEnv); id != "" {
		os.Exit(candidate(id, os.Getenv(addrEnv)))
	}
	goleak.VerifyTestMain(m)
}

func TestLeader(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log("\n" + got)
	// The candidates start 50 ms apart, so they are elected in that order
	// unless the machine is slow to start one: the test reads the order
	// from the output.
	m := regexp.MustCompile(`process (\d) leads; killing it \(SIGKILL\)\nprocess (\d) leads .*\nprocess (\d) leads after the resignation`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("output lacks the three leaderships")
	}
	a, b, c := m[1], m[2], m[3]
	for _, want := range []string{
		"by process " + a + ", then process " + b + ", then process " + c + ", one process at a time, epochs growing",
		"process " + c + " observed: process-" + a + " -> vacant -> process-" + b + " -> vacant -> process-" + c,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
