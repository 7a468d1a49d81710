package fence

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/relock-go/relock"
)

// ErrStale is what a guard's refusal matches: the writer's token is below
// the highest the resource has accepted, so its holder has lost the lock.
// Nothing was written; the caller rolls back and stops acting on the hold.
var ErrStale = errors.New("stale fencing token")

// StaleError is the reason of a refusal, inside the *relock.Error that
// names the operation and the resource; it matches ErrStale.
type StaleError struct {
	Token   int64 // the token the writer sent
	Highest int64 // the highest token the resource had accepted
}

// Error reads "stale fencing token <token>: the resource has seen <highest>".
func (e *StaleError) Error() string {
	return fmt.Sprintf("%v %d: the resource has seen %d", ErrStale, e.Token, e.Highest)
}

// Unwrap returns ErrStale, so errors.Is(err, ErrStale) finds it.
func (e *StaleError) Unwrap() error { return ErrStale }

// Guard admits a writer's token for a resource: it records the token as
// the highest when not below it, else returns an error matching ErrStale.
// Redis and SQL.Admitter are Guards; Middleware is backed by one.
type Guard interface {
	Admit(ctx context.Context, resource string, token int64) error
}

// wrap names the operation and the resource of a guard's error.
func wrap(op, resource string, err error) error {
	if err == nil {
		return nil
	}
	return &relock.Error{Op: op, Primitive: "fence", Name: resource, Err: err}
}

func stale(op, resource string, token, highest int64) error {
	return wrap(op, resource, &StaleError{Token: token, Highest: highest})
}

// checkArgs refuses an empty resource or a token no hold carries (tokens start at 1).
func checkArgs(op, resource string, token int64) error {
	switch {
	case resource == "":
		return wrap(op, resource, fmt.Errorf("%w: empty resource", relock.ErrInvalidArgument))
	case token <= 0:
		return wrap(op, resource, fmt.Errorf("%w: token %d: a hold's token is positive", relock.ErrInvalidArgument, token))
	}
	return nil
}

// RecordKey names the Redis key that keeps the highest token of key: in
// key's cluster slot, as the locks name their own auxiliary keys
// ("{key}:fence", or "key:fence" when key has a hash tag of its own).
func RecordKey(key string) string {
	if strings.Contains(key, "{") {
		return key + ":fence"
	}
	return "{" + key + "}:fence"
}

// checkKey refuses braces that are not a hash tag ("a{b", "{}"), since the
// record would then hash to another cluster slot.
func checkKey(op, key string, token int64) error {
	if err := checkArgs(op, key, token); err != nil {
		return err
	}
	if !strings.ContainsAny(key, "{}") {
		return nil
	}
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			return nil
		}
	}
	return wrap(op, key, fmt.Errorf("%w: a key may hold braces only around a non-empty hash tag, so that its record shares its slot", relock.ErrInvalidArgument))
}
