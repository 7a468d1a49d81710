package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFairQueue(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log("\n" + got)
	want := "served in this order:\n  quitter gave up\n  service 1\n  service 2\n  service 3\n  service 4\nleft in the line: 0\n"
	if !strings.HasSuffix(got, want) {
		t.Errorf("output ends with\n%s\nwant\n%s", got[strings.Index(got, "served"):], want)
	}
}
