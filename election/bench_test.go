package election_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// reportMedian reports the median and the 90th percentile of ds.
func reportMedian(b *testing.B, ds []time.Duration, what string) {
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, what+"-median-ms")
	b.ReportMetric(float64(ds[len(ds)*9/10].Microseconds())/1000, what+"-p90-ms")
	b.ReportMetric(0, "ns/op") // the figures above are the measure
}

// BenchmarkHandoverOnResign measures, on a redis-server, the time from
// Resign being called to the next candidate's Campaign returning with
// its leadership (two candidates on separate clients).
func BenchmarkHandoverOnResign(b *testing.B) {
	srv := redistest.StartServer(b)
	ctx := context.Background()
	a := election.New(srv.Client(b), "bench")
	c := election.New(srv.Client(b), "bench")
	leading, err := a.Campaign(ctx, "a")
	if err != nil {
		b.Fatal(err)
	}
	cur, next := a, c
	var ds []time.Duration
	for b.Loop() {
		got := make(chan context.Context, 1)
		go func() {
			l, err := next.Campaign(ctx, "x")
			if err != nil {
				b.Error(err)
			}
			got <- l
		}()
		// The candidate is in line before the leader resigns.
		for {
			n, _ := srv.Client(b).LLen(ctx, "redisson_lock_queue:{bench}").Result()
			if n == 1 {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		start := time.Now()
		if err := cur.Resign(leading); err != nil {
			b.Fatal(err)
		}
		leading = <-got
		ds = append(ds, time.Since(start))
		cur, next = next, cur
	}
	_ = cur.Resign(leading)
	reportMedian(b, ds, "handover")
}

// BenchmarkObserverLatency measures, on a redis-server, the time from a
// change (elected, resigned) being made to an observer on another client
// reporting it.
func BenchmarkObserverLatency(b *testing.B) {
	srv := redistest.StartServer(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := election.New(srv.Client(b), "observed")
	changes := election.New(srv.Client(b), "observed").Observe(ctx)
	<-changes
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		leading, err := e.Campaign(ctx, "x")
		if err != nil {
			b.Fatal(err)
		}
		<-changes
		ds = append(ds, time.Since(start))
		start = time.Now()
		if err := e.Resign(leading); err != nil {
			b.Fatal(err)
		}
		<-changes
		ds = append(ds, time.Since(start))
	}
	reportMedian(b, ds, "observed")
}
