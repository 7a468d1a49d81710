// Command tracing shows what relock reports to OpenTelemetry: a span for
// every acquire, and metrics of acquires, holds and the watchdog's renewals,
// printed as JSON by the stdout exporters.
//
// It takes a lock, re-enters it (the span says lock.reentrant), has another
// owner try it while held (outcome not_acquired, not an error status: a busy
// lock is no failure), then takes a read lock and two permits of a semaphore,
// held long enough for the watchdog to renew them. Each span is printed when
// its acquire returns; the metrics once, when the meter provider shuts down.
// Pass the same providers in production, with an OTLP exporter instead.
//
//	go run ./examples/tracing                           # embedded miniredis
//	REDIS_ADDR=127.0.0.1:6379 go run ./examples/tracing # a real Redis
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/relock-go/relock/examples/internal/exredis"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
	"github.com/relock-go/relock/watchdog"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) (err error) {
	rdb, closeAll, err := exredis.Connect(out)
	if err != nil {
		return err
	}
	defer closeAll()

	// Spans: printed synchronously as each ends (use a batcher in production).
	spans, err := stdouttrace.New(stdouttrace.WithWriter(out), stdouttrace.WithPrettyPrint(), stdouttrace.WithoutTimestamps())
	if err != nil {
		return err
	}
	// A bare resource: the default one adds the SDK's details to every export.
	res := resource.NewSchemaless(attribute.String("service.name", "relock-example"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithResource(res))
	defer func() { err = errors.Join(err, tp.Shutdown(context.Background())) }()

	// Metrics: collected by a periodic reader whose period is never reached
	// here; Shutdown makes it export once, at the end.
	metrics, err := stdoutmetric.New(stdoutmetric.WithWriter(out), stdoutmetric.WithPrettyPrint(), stdoutmetric.WithoutTimestamps())
	if err != nil {
		return err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics, sdkmetric.WithInterval(time.Hour))))
	defer func() {
		fmt.Fprintln(out, "\n== metrics")
		err = errors.Join(err, mp.Shutdown(context.Background()))
	}()

	// The watchdog reports renewals to its own meter provider; a watchdog of
	// our own carries it (by default every primitive shares watchdog.Default()).
	wd := watchdog.New(watchdog.WithMeterProvider(mp))
	// Each package has its own options; the same settings go to each.
	const renewed = 300 * time.Millisecond // renewed every 100 ms
	mu := lock.New(rdb, "examples:tracing:order",
		lock.WithTracerProvider(tp), lock.WithMeterProvider(mp), lock.WithWatchdog(wd),
		lock.WithWatchdogTimeout(renewed))
	fmt.Fprintln(out, "== Lock")
	held, err := mu.Lock(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "== Lock again with the holder's context: a re-entry")
	inner, err := mu.Lock(held)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "== TryLock by another owner while it is held")
	if _, err := mu.TryLock(context.Background()); !errors.Is(err, lock.ErrNotAcquired) {
		return fmt.Errorf("TryLock of a held lock: %v", err)
	}
	if err := errors.Join(mu.Unlock(inner), mu.Unlock(held)); err != nil {
		return err
	}

	fmt.Fprintln(out, "== RLock")
	rw := rwlock.New(rdb, "examples:tracing:catalog",
		rwlock.WithTracerProvider(tp), rwlock.WithMeterProvider(mp), rwlock.WithWatchdog(wd),
		rwlock.WithWatchdogTimeout(renewed))
	rheld, err := rw.RLock(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "== Acquire 2 permits of 3")
	sem := semaphore.New(rdb, "examples:tracing:exports", 3,
		semaphore.WithTracerProvider(tp), semaphore.WithMeterProvider(mp), semaphore.WithWatchdog(wd),
		semaphore.WithWatchdogTimeout(renewed))
	permits, err := sem.Acquire(ctx, 2)
	if err != nil {
		return errors.Join(err, rw.RUnlock(rheld))
	}
	time.Sleep(250 * time.Millisecond) // work; the watchdog renews both leases
	return errors.Join(sem.Release(permits), rw.RUnlock(rheld))
}
