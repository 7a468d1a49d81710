package rwlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// TestWriterBehindAReaderMarksAtOnce: in one process a reader and then a
// writer wait for a write lock held elsewhere. When it is released the
// reader gets in; the writer, now first in line, must try at once and so
// mark itself waiting while the reader still holds, rather than sleep to
// its fallback timer (a third of the lease): readers of other processes
// coming and going hand over hand would otherwise keep the lock from ever
// falling free, and no unlock would wake the writer (the soak saw 10 s).
func TestWriterBehindAReaderMarksAtOnce(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "promote"
		holder := rwlock.New(env.Universal, name)
		w0, err := holder.Lock(ctx)
		require.NoError(t, err)

		other := otherClient(t, env) // the process with the reader and the writer
		rw := rwlock.New(other, name)
		readerIn := make(chan error, 1)
		readerGo := make(chan struct{})
		go func() {
			r, err := rw.RLock(ctx)
			readerIn <- err
			if err != nil {
				return
			}
			<-readerGo
			readerIn <- rw.RUnlock(r)
		}()
		time.Sleep(200 * time.Millisecond) // the reader queues first
		writerIn := make(chan error, 1)
		go func() {
			w, err := rw.Lock(ctx)
			if err == nil {
				err = rw.Unlock(w)
			}
			writerIn <- err
		}()
		time.Sleep(200 * time.Millisecond) // the writer queues behind it

		require.NoError(t, holder.Unlock(w0))
		require.NoError(t, <-readerIn)
		// The reader holds; the writer must mark itself well before its
		// 10 s fallback.
		require.Eventually(t, func() bool {
			n, err := env.Universal.ZCard(ctx, waitersKey(name)).Result()
			return err == nil && n == 1
		}, 3*time.Second, 10*time.Millisecond, "the writer promoted behind a reader did not mark itself")
		close(readerGo)
		require.NoError(t, <-readerIn)
		require.NoError(t, <-writerIn)
	})
}
