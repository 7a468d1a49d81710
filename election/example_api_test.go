package election_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/watchdog"
)

// exampleRedis is an embedded Redis for the examples, closed by done.
func exampleRedis() (rdb *redis.Client, done func()) {
	mr, _ := miniredis.Run()
	rdb = redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { _ = rdb.Close(); mr.Close() }
}

func ExampleNew() {
	rdb, done := exampleRedis()
	defer done()
	e := election.New(rdb, "billing:leader")
	fmt.Println(e.Name(), e.Err())
	// Output: billing:leader <nil>
}

func ExampleElection_Campaign() {
	rdb, done := exampleRedis()
	defer done()
	ctx := context.Background()
	a, b := election.New(rdb, "jobs"), election.New(rdb, "jobs")
	leading, _ := a.Campaign(ctx, "pod-a")

	// ctx bounds the wait only: pod-b gives up after 50 ms in line.
	wait, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := b.Campaign(wait, "pod-b")
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	_ = a.Resign(leading)
	// Output: true
}

func ExampleElection_Resign() {
	rdb, done := exampleRedis()
	defer done()
	ctx := context.Background()
	e := election.New(rdb, "jobs")
	leading, _ := e.Campaign(ctx, "pod-a")
	fmt.Println(e.Resign(leading), leading.Err() != nil)
	fmt.Println(errors.Is(e.Resign(leading), election.ErrNotHeld))
	// Output:
	// <nil> true
	// true
}

func ExampleElection_Proclaim() {
	rdb, done := exampleRedis()
	defer done()
	ctx := context.Background()
	e := election.New(rdb, "jobs")
	leading, _ := e.Campaign(ctx, "pod-a: starting")
	_ = e.Proclaim(leading, "pod-a: serving")
	l, _ := e.Leader(ctx)
	fmt.Println(l.Value)
	_ = e.Resign(leading)
	fmt.Println(errors.Is(e.Proclaim(leading, "late"), election.ErrNotHeld))
	// Output:
	// pod-a: serving
	// true
}

func ExampleElection_Leader() {
	rdb, done := exampleRedis()
	defer done()
	ctx := context.Background()
	e := election.New(rdb, "jobs")
	_, err := e.Leader(ctx)
	fmt.Println(errors.Is(err, election.ErrNoLeader))
	leading, _ := e.Campaign(ctx, "pod-a")
	l, _ := e.Leader(ctx)
	fmt.Println(l.Value, l.Vacant())
	_ = e.Resign(leading)
	// Output:
	// true
	// pod-a false
}

func ExampleLeader_Vacant() {
	fmt.Println(election.Leader{}.Vacant(), election.Leader{Value: "pod-a", Epoch: 7}.Vacant())
	// Output: true false
}

func ExampleEpoch() {
	rdb, done := exampleRedis()
	defer done()
	ctx := context.Background()
	e := election.New(rdb, "jobs")
	first, _ := e.Campaign(ctx, "a")
	e1, _ := election.Epoch(first)
	_ = e.Resign(first)
	second, _ := e.Campaign(ctx, "a")
	e2, _ := election.Epoch(second)
	_ = e.Resign(second)
	// A store that keeps the largest epoch it saw refuses the first
	// leader's late writes.
	fmt.Println(e2 > e1)
	_, ok := election.Epoch(ctx)
	fmt.Println(ok)
	// Output:
	// true
	// false
}

func ExampleElection_Check() {
	rdb, done := exampleRedis()
	defer done()
	ctx := context.Background()
	e := election.New(rdb, "jobs")
	// Wire it into a readiness probe: it fails while this process leads
	// with its lease's renewals late.
	fmt.Println(e.Check(ctx))
	leading, _ := e.Campaign(ctx, "pod-a")
	fmt.Println(e.Check(ctx))
	_ = e.Resign(leading)
	// Output:
	// <nil>
	// <nil>
}

func ExampleElection_Err() {
	rdb, done := exampleRedis()
	defer done()
	e := election.New(rdb, "jobs", election.WithWatchdogTimeout(time.Millisecond))
	fmt.Println(errors.Is(e.Err(), election.ErrInvalidArgument))
	// Output: true
}

func ExampleElection_Name() {
	rdb, done := exampleRedis()
	defer done()
	fmt.Println(election.New(rdb, "jobs").Name())
	// Output: jobs
}

func ExampleWithWatchdogTimeout() {
	rdb, done := exampleRedis()
	defer done()
	// A crashed leader keeps the others waiting 10 s at most.
	e := election.New(rdb, "jobs", election.WithWatchdogTimeout(10*time.Second))
	fmt.Println(e.Err())
	// Output: <nil>
}

func ExampleWithLeaseTime() {
	rdb, done := exampleRedis()
	defer done()
	ctx := context.Background()
	// Each leadership lasts at most 100 ms, unrenewed.
	e := election.New(rdb, "jobs", election.WithLeaseTime(100*time.Millisecond))
	leading, _ := e.Campaign(ctx, "pod-a")
	fmt.Println(leading.Err())
	_ = e.Resign(leading)
	// Output: <nil>
}

func ExampleWithUnlockTimeout() {
	rdb, done := exampleRedis()
	defer done()
	e := election.New(rdb, "jobs", election.WithUnlockTimeout(time.Second))
	fmt.Println(e.Err())
	// Output: <nil>
}

func ExampleWithReplicaSync() {
	rdb, done := exampleRedis()
	defer done()
	// Wait up to 500 ms for a replica to acknowledge each leadership.
	e := election.New(rdb, "jobs", election.WithReplicaSync(500*time.Millisecond))
	fmt.Println(e.Err())
	// Output: <nil>
}

func ExampleWithMinReplicas() {
	rdb, done := exampleRedis()
	defer done()
	e := election.New(rdb, "jobs", election.WithMinReplicas(2))
	fmt.Println(e.Err())
	// Output: <nil>
}

func ExampleWithHolderLabel() {
	rdb, done := exampleRedis()
	defer done()
	ctx := context.Background()
	// relock ls shows the leader as pod-a.
	e := election.New(rdb, "jobs", election.WithHolderLabel("pod-a"))
	leading, _ := e.Campaign(ctx, "pod-a")
	fmt.Println(rdb.Exists(ctx, "relock_holder:{jobs}:"+ownerOf(rdb, ctx)).Val())
	_ = e.Resign(leading)
	// Output: 1
}

// ownerOf is the one holder of the fair lock "jobs".
func ownerOf(rdb *redis.Client, ctx context.Context) string {
	fields, _ := rdb.HKeys(ctx, "jobs").Result()
	if len(fields) != 1 {
		return ""
	}
	return fields[0]
}

func ExampleWithTracerProvider() {
	rdb, done := exampleRedis()
	defer done()
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := election.New(rdb, "jobs", election.WithTracerProvider(tp))
	leading, _ := e.Campaign(ctx, "pod-a")
	_ = e.Resign(leading)
	for _, s := range rec.Ended() {
		fmt.Println(s.Name())
	}
	// Output:
	// acquire lock
	// campaign election
	// release lock
}

func ExampleWithMeterProvider() {
	rdb, done := exampleRedis()
	defer done()
	reader := metric.NewManualReader()
	e := election.New(rdb, "jobs", election.WithMeterProvider(metric.NewMeterProvider(metric.WithReader(reader))))
	fmt.Println(e.Err())
	// Output: <nil>
}

func ExampleWithLogger() {
	rdb, done := exampleRedis()
	defer done()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	e := election.New(rdb, "jobs", election.WithLogger(log))
	fmt.Println(e.Err())
	// Output: <nil>
}

func ExampleWithWatchdog() {
	rdb, done := exampleRedis()
	defer done()
	wd := watchdog.New()
	e := election.New(rdb, "jobs", election.WithWatchdog(wd))
	fmt.Println(e.Err())
	// Output: <nil>
}
