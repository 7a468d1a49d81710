package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/tracing"
)

// Campaign waits until this candidate is elected and returns the leading
// context: it carries the leadership (Epoch, Resign, Proclaim) and ends
// with it, cause ErrLockLost once the lease is known lost. ctx bounds the
// wait only (its end takes the candidate out of the line). value, at most
// MaxValue bytes, is shown to observers and Leader.
func (e *Election) Campaign(ctx context.Context, value string) (context.Context, error) {
	if err := e.ident().Check("campaign", ctx, unmade); err != nil {
		return nil, err
	}
	if len(value) > MaxValue {
		return nil, e.id.Refuse("campaign", fmt.Sprintf("value of %d bytes, longer than %d", len(value), MaxValue))
	}
	if termOf(ctx, e) != nil {
		return nil, e.id.Refuse("campaign", "the context already leads this election")
	}
	start := time.Now()
	ctx, span := e.inst.tracer.Start(ctx, tracing.SpanCampaignElection, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(tracing.LockName.String(e.name), tracing.Primitive.String(primitive), tracing.ElectionValue.String(value)))
	defer span.End()
	leading, t, err := e.campaign(ctx, value)
	span.SetAttributes(tracing.WaitMillis.Int64(time.Since(start).Milliseconds()))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	span.SetAttributes(tracing.ElectionEpoch.Int64(t.epoch))
	return leading, nil
}

// campaign takes the fair lock, keeping the record with its hold, then writes it.
func (e *Election) campaign(ctx context.Context, value string) (context.Context, *term, error) {
	held, err := e.fair.Lock(core.KeepWith(ctx, e.name, e.record))
	if err != nil {
		return nil, nil, e.id.Wrap("campaign", errs.Reason(err))
	}
	owner, _ := core.Owner(held)
	epoch, ok := lock.FencingToken(held)
	if !ok {
		// Lost as it was granted (a hand-over that came after its lease
		// had lapsed): a term recorded now would have no epoch.
		_ = e.fair.Unlock(held)
		return nil, nil, e.id.Wrap("campaign", fmt.Errorf("%w: the lease lapsed as the leadership was granted", ErrLockLost))
	}
	t := &term{e: e, owner: owner, epoch: epoch, held: held}
	vals, err := electLua{Lock: e.name, Record: e.record, Channel: e.channel, Owner: owner, Epoch: epoch,
		Value: value, Publish: e.hub.PublishCommand()}.call().Retrying(held, e.client.Client, e.cfg.UnlockTimeout).Int64Slice()
	if err != nil {
		err = fmt.Errorf("writing the leader's record %s: %w", e.record, err)
	} else if len(vals) != 3 || vals[0] != 1 {
		err = fmt.Errorf("%w: the lease lapsed before the leader's record was written", ErrLockLost)
	}
	if err != nil {
		if uerr := e.fair.Unlock(held); uerr != nil && !errors.Is(uerr, ErrLockLost) {
			e.logger().Warn("relock: election could not give back a leadership it could not record",
				"election", e.name, "epoch", epoch, "err", uerr)
		}
		return nil, nil, e.id.Wrap("campaign", err)
	}
	e.mu.Lock()
	e.current = t
	e.mu.Unlock()
	e.inst.transition(ctx, tracing.TransitionElected, 1)
	// A loss is counted when the hold ends. That may run before AfterFunc
	// returns, so stopAF is set under endMu, as ended reads it.
	stop := context.AfterFunc(held, func() { e.ended(t, tracing.TransitionLost) })
	t.endMu.Lock()
	t.stopAF = stop
	t.endMu.Unlock()
	return context.WithValue(held, termKey{}, t), t, nil
}

// Run campaigns with value, runs lead while leading, resigns only after
// lead returns, and campaigns again until ctx ends (nil) or lead returns
// an error of its own (returned after resigning). lead's context ends with
// the leadership (cause ErrLockLost) or ctx; an error lead returns for that
// ends the term, not Run. A failed campaign is retried after a pause with
// a warning; bad input or a closed client ends Run at once with its error.
func (e *Election) Run(ctx context.Context, value string, lead func(leading context.Context) error) error {
	if err := e.ident().Check("run", ctx, unmade); err != nil {
		return err
	}
	if lead == nil {
		return e.id.Refuse("run", "nil lead func")
	}
	pause := 100 * time.Millisecond
	for {
		leading, err := e.Campaign(ctx, value)
		switch {
		case ctx.Err() != nil:
			if leading != nil {
				_ = e.Resign(leading)
			}
			return nil
		case errors.Is(err, ErrInvalidArgument), core.ClientClosed(err):
			// bad input, or a closed client: no campaign can succeed
			return err
		case err != nil:
			e.logger().Warn("relock: election campaign failed; campaigning again", "election", e.name, "err", err, "pause", pause)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(pause):
			}
			pause = min(2*pause, 5*time.Second)
			continue
		}
		pause = 100 * time.Millisecond
		if err := e.term(ctx, leading, lead); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// term runs lead for one leadership, then resigns. It returns lead's
// error unless the leadership's end or ctx's caused it.
func (e *Election) term(ctx context.Context, leading context.Context, lead func(context.Context) error) error {
	lctx, cancel := context.WithCancelCause(leading)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	lerr := lead(lctx)
	stop()
	if rerr := e.Resign(leading); rerr != nil && !errors.Is(rerr, ErrLockLost) {
		e.logger().Warn("relock: election could not resign; the leadership lapses with its lease",
			"election", e.name, "err", rerr)
	}
	ended := lctx.Err() != nil && (errors.Is(lerr, lctx.Err()) || errors.Is(lerr, context.Cause(lctx)))
	cancel(nil)
	if lerr != nil && !ended {
		return lerr
	}
	return nil
}
