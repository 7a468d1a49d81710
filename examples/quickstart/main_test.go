package main

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestQuickstart runs the example on embedded miniredis and fails if any
// scene fails (check calls log.Fatal).
func TestQuickstart(t *testing.T) {
	t.Setenv("REDIS_ADDR", "")
	main()
}
