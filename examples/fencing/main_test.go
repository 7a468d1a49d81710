package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFencing(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log("\n" + got)

	a := regexp.MustCompile(`A: locked with fencing token (\d+)`).FindStringSubmatch(got)
	b := regexp.MustCompile(`B: locked once A's lease ended, fencing token (\d+)`).FindStringSubmatch(got)
	if a == nil || b == nil {
		t.Fatal("no tokens reported")
	}
	tokA, _ := strconv.Atoi(a[1])
	tokB, _ := strconv.Atoi(b[1])
	if tokB <= tokA {
		t.Errorf("B's token %d is not after A's %d", tokB, tokA)
	}
	want := []string{
		`database: accepted "A's first entry" with token ` + a[1],
		"A: checked its lock (held: true), then stalls",
		`database: accepted "B's entry" with token ` + b[1],
		"A: resumes and writes",
		`database: REJECTED "A's second entry": relock: check fence "` + name + `": stale fencing token ` + a[1] + ": the resource has seen " + b[1],
		"A: its lock context says lost: true; Unlock says lost: true",
		`ledger holds "B's entry"`,
	}
	rest := got
	for _, w := range want { // in this order
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("output lacks, in order, %q", w)
		}
		rest = rest[i+len(w):]
	}
}
