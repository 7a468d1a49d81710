package redistest

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
)

// ScriptArgs runs call on a client that sends nothing and returns what
// the first script call it makes would send: the script's hash, the
// number of keys, then the keys and arguments. Every command is answered
// with an error reply, which no script caller retries. It lets a test
// see a script's keys and arguments as its Go caller lays them out,
// without a server.
func ScriptArgs(call func(redis.UniversalClient)) (hash any, nkeys int, argv []any) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer c.Close()
	h := &captureHook{}
	c.AddHook(h)
	call(c)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.args) < 3 {
		return nil, 0, nil
	}
	n, _ := h.args[2].(int)
	return h.args[1], n, h.args[3:]
}

// captureHook keeps the first EVALSHA or EVAL's arguments and answers
// every command with errCaptured.
type captureHook struct {
	mu   sync.Mutex
	args []any
}

// errCaptured is a Redis error reply: final, never sent again.
type errCaptured struct{}

func (errCaptured) Error() string { return "ERR captured by redistest.ScriptArgs" }
func (errCaptured) RedisError()   {}

func (h *captureHook) answer(cmd redis.Cmder) error {
	args := cmd.Args()
	if name, _ := args[0].(string); len(args) >= 3 && (strings.EqualFold(name, "evalsha") || strings.EqualFold(name, "eval")) {
		h.mu.Lock()
		if h.args == nil {
			h.args = append([]any(nil), args...)
		}
		h.mu.Unlock()
	}
	cmd.SetErr(errCaptured{})
	return errCaptured{}
}

// DialHook is go-redis's, unchanged: no command reaches it.
func (h *captureHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook answers the command itself.
func (h *captureHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error { return h.answer(cmd) }
}

// ProcessPipelineHook answers each command itself.
func (h *captureHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(_ context.Context, cmds []redis.Cmder) error {
		var err error
		for _, cmd := range cmds {
			err = h.answer(cmd)
		}
		return err
	}
}

// Wrapper is a script's typed Go caller, as MirrorsHeader checks it: a
// struct whose fields are the script's keys then its arguments, in the
// order of its header (luaHeader), and, when the script takes a
// variadic tail, a last field holding it: a slice, which MirrorsHeader
// fills when it is a []any and leaves empty otherwise.
type Wrapper struct {
	Value any                        // a value of the wrapper struct
	Run   func(w any, c conn.Client) // runs w (of Value's type) on c
	// Partial is set where Run leaves out the trailing keys and
	// arguments that the header says are absent for it (a plain lock's
	// call of a script that a fair lock calls with more).
	Partial bool
}

// MirrorsHeader fails t unless w's fields match the keys and arguments
// its script's header lists (luaHeader), one for one, and w's call
// sends them in field order with the header's number of keys.
func MirrorsHeader(t testing.TB, w Wrapper, keys, args []string) {
	t.Helper()
	v := reflect.New(reflect.TypeOf(w.Value)).Elem()
	fixed := v.NumField()
	var tail []any
	if last := v.Type().Field(fixed - 1).Type; last.Kind() == reflect.Slice {
		fixed--
		if last == reflect.TypeFor[[]any]() {
			tail = []any{"tail-a", "tail-b", "tail-c"}
			v.Field(fixed).Set(reflect.ValueOf(tail))
		}
	}
	want := make([]any, fixed)
	for i := range fixed {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(1000 + i))
		case reflect.String:
			f.SetString(fmt.Sprint("field-", i))
		default:
			f.Set(reflect.ValueOf(fmt.Sprint("field-", i)))
		}
		want[i] = f.Interface()
	}
	if fixed != len(keys)+len(args) {
		t.Fatalf("%s has %d fields before its tail; the header lists %d keys %q and %d arguments %q",
			v.Type(), fixed, len(keys), keys, len(args), args)
	}
	for i, text := range slices.Concat(keys, args) {
		if text == "" {
			t.Fatalf("the header of %s skips entry %d", v.Type(), i+1)
		}
	}
	_, nkeys, got := ScriptArgs(func(c redis.UniversalClient) { w.Run(v.Interface(), conn.Of(c)) })
	if w.Partial {
		nargs := min(max(len(got)-nkeys, 0), len(args))
		want = append(want[:min(nkeys, len(keys))], want[len(keys):len(keys)+nargs]...)
	} else if nkeys != len(keys) {
		t.Fatalf("%s sends %d keys; the header lists %d: %q", v.Type(), nkeys, len(keys), keys)
	}
	if !reflect.DeepEqual(got, append(want, tail...)) {
		t.Fatalf("%s sends %v; want its fields in order, %d of them keys: %v", v.Type(), got, nkeys, append(want, tail...))
	}
}

// WrappersMirrorHeaders runs MirrorsHeader for each of wrappers against
// the header of its file in fsys's lua directory (named as
// EveryScriptWrapped says), then EveryScriptWrapped.
func WrappersMirrorHeaders(t *testing.T, fsys fs.FS, wrappers map[string]Wrapper, skip ...string) {
	t.Helper()
	for name, w := range wrappers {
		t.Run(name, func(t *testing.T) {
			file, _, _ := strings.Cut(name, ",")
			src, err := fs.ReadFile(fsys, "lua/"+file)
			if err != nil {
				t.Fatal(err)
			}
			keys, args := luaHeader(string(src))
			MirrorsHeader(t, w, keys, args)
		})
	}
	EveryScriptWrapped(t, fsys, wrappers, skip...)
}

// EveryScriptWrapped fails t unless each file of fsys's lua directory is
// a wrapper's (named by its file, or its file then a comma and a note) or
// one of skip: a script no wrapper runs, such as a library.
func EveryScriptWrapped(t testing.TB, fsys fs.FS, wrappers map[string]Wrapper, skip ...string) {
	t.Helper()
	files, err := fs.Glob(fsys, "lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no lua/*.lua: %v", err)
	}
	wrapped := map[string]bool{}
	for name := range wrappers {
		file, _, _ := strings.Cut(name, ",")
		wrapped[file] = true
	}
	for _, f := range files {
		if name := path.Base(f); !wrapped[name] && !slices.Contains(skip, name) {
			t.Errorf("%s has no wrapper", f)
		}
	}
}
