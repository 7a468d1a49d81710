package redlock_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

// Every exported method of every primitive, called on a nil pointer,
// returns ErrInvalidArgument naming the call and the nil value (or, when
// it returns no error, a zero answer) instead of panicking. The methods
// are found by reflection, so that a new one is covered too.
func TestNilPrimitiveRefused(t *testing.T) {
	var (
		m  *lock.Mutex
		rw *rwlock.RWMutex
		s  *semaphore.Semaphore
		l  *redlock.Lock
	)
	values := []any{m, rw, rw.ReadLocker(), rw.WriteLocker(), (*rwlock.Side)(nil), s, l}
	for _, v := range values {
		rv := reflect.ValueOf(v)
		for i := range rv.NumMethod() {
			method := rv.Type().Method(i)
			name := rv.Type().String() + "." + method.Name
			var out []reflect.Value
			require.NotPanics(t, func() { out = rv.Method(i).Call(nilArgs(rv.Method(i).Type())) }, name)
			last := out[len(out)-1]
			if last.Type() != reflect.TypeFor[error]() {
				continue
			}
			if rv.IsNil() {
				err, _ := last.Interface().(error)
				require.ErrorIs(t, err, lock.ErrInvalidArgument, name)
				require.ErrorContains(t, err, "nil *", name)
				var e *relock.Error
				require.ErrorAs(t, err, &e, name)
				require.NotEmpty(t, e.Op, name+": the error names the call")
			}
		}
	}
}

// nilArgs makes arguments for a call of type ft: a live context, a
// function that does nothing, 1 for counts, a second for durations.
func nilArgs(ft reflect.Type) []reflect.Value {
	n := ft.NumIn()
	if ft.IsVariadic() {
		n-- // no options
	}
	args := make([]reflect.Value, n)
	for i := range n {
		in := ft.In(i)
		switch {
		case in == reflect.TypeFor[context.Context]():
			args[i] = reflect.ValueOf(context.Background())
		case in.Kind() == reflect.Func:
			args[i] = reflect.MakeFunc(in, func([]reflect.Value) []reflect.Value {
				return []reflect.Value{reflect.Zero(reflect.TypeFor[error]())}
			})
		case in == reflect.TypeFor[time.Duration]():
			args[i] = reflect.ValueOf(time.Second)
		default:
			args[i] = reflect.New(in).Elem()
			if in.Kind() == reflect.Int64 {
				args[i].SetInt(1)
			}
		}
	}
	return args
}
