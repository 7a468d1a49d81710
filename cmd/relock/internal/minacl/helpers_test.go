package minacl_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(redistest.Main(m)) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type result struct {
	leading context.Context
	err     error
}

// campaignAsync campaigns on a goroutine of its own, for a candidate that
// waits in line.
func campaignAsync(ctx context.Context, e *election.Election, value string) <-chan result {
	out := make(chan result, 1)
	go func() {
		leading, err := e.Campaign(ctx, value)
		out <- result{leading, err}
	}()
	return out
}
