package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFencingHTTP(t *testing.T) {
	t.Setenv("REDIS_ADDR", "")
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log("\n" + got)
	rest := got
	for _, w := range []string{
		"A: PUT with token", "204 No Content",
		"B: PUT with token", "204 No Content",
		"A: PUT with token", `409 Conflict {"error":"stale fencing token","highest":`,
		`the service holds "B's version"`,
	} { // in this order
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("output lacks, in order, %q", w)
		}
		rest = rest[i+len(w):]
	}
}
