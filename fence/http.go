package fence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/relock-go/relock"
)

// Header is the HTTP header that carries a writer's fencing token.
const Header = "Fencing-Token"

// ErrNoToken: a request carries no fencing token.
var ErrNoToken = errors.New("no fencing token")

// SetToken sets the Header of an outgoing request to token.
func SetToken(r *http.Request, token int64) { r.Header.Set(Header, strconv.FormatInt(token, 10)) }

// RequestToken reads an incoming request's token: ErrNoToken when absent,
// relock.ErrInvalidArgument when not a positive integer.
func RequestToken(r *http.Request) (int64, error) {
	v := r.Header.Get(Header)
	if v == "" {
		return 0, ErrNoToken
	}
	t, err := strconv.ParseInt(v, 10, 64)
	if err != nil || t <= 0 {
		return 0, fmt.Errorf("%w: %s %q is not a positive integer", relock.ErrInvalidArgument, Header, v)
	}
	return t, nil
}

type tokenKey struct{}

// TokenFrom returns the token Middleware admitted, from the request's ctx.
func TokenFrom(ctx context.Context) (int64, bool) {
	t, ok := ctx.Value(tokenKey{}).(int64)
	return t, ok
}

// Middleware refuses a request whose token (Header) is below the highest
// its resource (named by resource) has admitted: 409 Conflict with a JSON
// body {"error", "resource", "token", "highest"}; 428 without a token, 400
// with a malformed one, 503 when g fails. Within one server, a resource's
// requests are handled one at a time, so a newer token cannot overtake an
// admitted one in the handler. Across servers, or when the handler's
// writes can outlive it, fence those writes too with TokenFrom's token.
func Middleware(g Guard, resource func(*http.Request) string) func(http.Handler) http.Handler {
	var locks keyedMutex
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			res := resource(r)
			token, err := RequestToken(r)
			switch {
			case errors.Is(err, ErrNoToken):
				writeJSON(w, http.StatusPreconditionRequired, map[string]any{"error": err.Error(), "resource": res})
				return
			case err != nil:
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error(), "resource": res})
				return
			}
			unlock := locks.lock(res)
			defer unlock()
			if err := g.Admit(r.Context(), res, token); err != nil {
				WriteError(w, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenKey{}, token)))
		})
	}
}

// WriteError answers a guard's error as Middleware does: 409 Conflict for
// ErrStale, 400 for a bad argument, 503 otherwise.
func WriteError(w http.ResponseWriter, err error) {
	var se *StaleError
	var re *relock.Error
	body := map[string]any{"error": err.Error()}
	if errors.As(err, &re) {
		body["resource"] = re.Name
	}
	switch {
	case errors.As(err, &se):
		body["error"], body["token"], body["highest"] = ErrStale.Error(), se.Token, se.Highest
		writeJSON(w, http.StatusConflict, body)
	case errors.Is(err, relock.ErrInvalidArgument):
		writeJSON(w, http.StatusBadRequest, body)
	default:
		writeJSON(w, http.StatusServiceUnavailable, body)
	}
}

func writeJSON(w http.ResponseWriter, status int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// keyedMutex serializes the requests of one resource within a server.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyed
}

type keyed struct {
	mu    sync.Mutex
	users int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]*keyed)
	}
	e := k.m[key]
	if e == nil {
		e = &keyed{}
		k.m[key] = e
	}
	e.users++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.users--; e.users == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
