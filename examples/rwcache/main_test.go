package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRWCache(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log("\n" + got)
	for _, want := range []string{
		// Readers are served the old entry while the new one is fetched...
		`readers served during fetch:     ["v1"]`,
		// ...none while it is rewritten (so none saw it half-written)...
		`readers served during write:     []`,
		// ...and the new one as soon as the writer downgrades.
		`readers served during downgrade: ["v2"]`,
		`readers served during done:      ["v2"]`,
		// The downgraded holder still keeps writers out.
		"a rival writer's TryLock: not acquired = true",
		"built the index from the entry it wrote: v2",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(got, "TORN") {
		t.Error("a reader was served a half-written entry")
	}
}
