// Command fencinghttp puts fence's HTTP guard in front of a small
// service: a document store whose writers hold a lock and send its
// fencing token with each request (the Fencing-Token header).
//
// The service wraps its handler in fence.Middleware, backed by the Redis
// guard: a request whose token is below the highest the document has
// admitted is answered 409 Conflict with a JSON body, and never reaches
// the handler. The handler writes the document with the same guard and
// the admitted token (fence.TokenFrom), so that the write itself is
// fenced even across several instances of the service.
//
// Writer A takes the lock, saves a draft, and stalls past its 500 ms
// lease; B takes the lock and saves; A resumes and saves: refused.
//
//	go run ./examples/fencinghttp                           # embedded miniredis
//	REDIS_ADDR=127.0.0.1:6379 go run ./examples/fencinghttp # a real Redis
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/examples/internal/exredis"
	"github.com/relock-go/relock/fence"
	"github.com/relock-go/relock/lock"
)

// doc is the document's key in Redis; the writers' lock is named after it.
const (
	doc      = "examples:fencinghttp:report"
	lockName = doc + ":writer"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	rdb, closeAll, err := exredis.Connect(out)
	if err != nil {
		return err
	}
	defer closeAll()
	url, stop, err := serve(rdb)
	if err != nil {
		return err
	}
	defer stop()
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	save := func(who string, token int64, text string) (int, string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, url+"/docs/"+doc, strings.NewReader(text))
		fence.SetToken(req, token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Fprintf(out, "%s: PUT with token %d: %s %s\n", who, token, resp.Status, bytes.TrimSpace(body))
		return resp.StatusCode, string(body), nil
	}

	muA := lock.New(rdb, lockName, lock.WithLeaseTime(500*time.Millisecond))
	heldA, err := muA.Lock(ctx)
	if err != nil {
		return err
	}
	tokA, _ := lock.FencingToken(heldA)
	if _, _, err := save("A", tokA, "A's draft"); err != nil {
		return err
	}
	fmt.Fprintln(out, "A: stalls past its lease")

	muB := lock.New(rdb, lockName)
	heldB, err := muB.Lock(ctx) // waits until A's lease ends
	if err != nil {
		return err
	}
	tokB, _ := lock.FencingToken(heldB)
	if _, _, err := save("B", tokB, "B's version"); err != nil {
		return err
	}
	if err := muB.Unlock(heldB); err != nil {
		return err
	}

	fmt.Fprintln(out, "A: resumes and saves, as it was about to")
	status, _, err := save("A", tokA, "A's final")
	if err != nil {
		return err
	}
	if status != http.StatusConflict {
		return fmt.Errorf("the service accepted a stale write: %d", status)
	}
	if err := muA.Unlock(heldA); !errors.Is(err, lock.ErrLockLost) {
		return fmt.Errorf("unlock of A: %v, want lost", err)
	}
	v, err := rdb.Get(ctx, doc).Result()
	fmt.Fprintf(out, "the service holds %q\n", v)
	return err
}

// serve starts the document service on a loopback port: PUT /docs/{id}
// stores the body under the key id, fenced by the request's token.
func serve(rdb redis.UniversalClient) (url string, stop func(), err error) {
	guard := fence.NewRedis(rdb)
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /docs/{id}", func(w http.ResponseWriter, r *http.Request) {
		token, _ := fence.TokenFrom(r.Context()) // admitted by the middleware
		body, _ := io.ReadAll(r.Body)
		if err := guard.Set(r.Context(), r.PathValue("id"), token, body, 0); err != nil {
			fence.WriteError(w, err) // 409 if a newer token wrote meanwhile
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	docID := func(r *http.Request) string { return strings.TrimPrefix(r.URL.Path, "/docs/") }
	srv := &http.Server{Handler: fence.Middleware(guard, docID)(mux), ReadHeaderTimeout: 5 * time.Second}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close(); <-done }, nil
}
