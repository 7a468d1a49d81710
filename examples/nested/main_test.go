package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNested(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log("\n" + got)

	// The hold count climbs with the call chain and falls back as it returns.
	var counts []int
	for _, m := range regexp.MustCompile(`hold count (\d+)`).FindAllStringSubmatch(got, -1) {
		n, _ := strconv.Atoi(m[1])
		counts = append(counts, n)
	}
	if want := []int{1, 2, 3, 2, 1, 0}; !slices.Equal(counts, want) {
		t.Errorf("hold counts = %v, want %v", counts, want)
	}
	// One fencing token per acquisition (re-entries too), each larger.
	var tokens []int
	for _, m := range regexp.MustCompile(`fencing token (\d+)`).FindAllStringSubmatch(got, -1) {
		n, _ := strconv.Atoi(m[1])
		tokens = append(tokens, n)
	}
	if len(tokens) != 3 || tokens[0] >= tokens[1] || tokens[1] >= tokens[2] {
		t.Errorf("fencing tokens = %v, want 3 increasing", tokens)
	}
	for _, want := range []string{
		"another request's TryLock: not acquired = true",
		"after PlaceOrder returned: order locked = false",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
