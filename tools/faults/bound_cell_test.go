//go:build faults && linux

package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/lock"
)

// The letters a cell is marked with, one for each promise it broke.
const (
	flagOverrun  = 'O' // returned later than its bound + 100 ms
	flagUnnamed  = 'N' // an error that does not name the operation and the lock
	flagOutcome  = 'E' // a Redlock call that the quorum should have decided the other way
	flagLeft     = 'L' // something still held once the fault was over
	flagHung     = 'H' // had not returned boundStraggle after the fault ended
	flagSetup    = 'S' // the cell could not be set up before the fault
	boundLegends = "O overran its bound + 100 ms, N error does not name op and lock, " +
		"E wrong outcome for a Redlock (quorum must succeed, multi must fail), " +
		"L left held after the fault, H never returned, S setup failed"
)

// boundCell is one cell of the table: a row (one method of a primitive)
// under one fault, with one client setting.
type boundCell struct {
	fault, client string
	prim          *boundPrim
	row           *boundRow
	name          string // the lock's name, unique within the fault's servers
	clients       []redis.UniversalClient
	subj          *boundSubject
	call          *boundCall
	setupErr      error

	// Written by the call's goroutine, read once returned is closed.
	took     time.Duration
	end      time.Time
	err      error
	returned chan struct{}

	hung  bool
	flags []byte
	notes []string
}

// boundCall is what one call works with and leaves: the hold taken for it
// before the fault, and the holds to let go once the fault is over.
type boundCall struct {
	held  context.Context
	keep  []func() error
	start time.Time
	// fnIn and fnOut are when a Do's fn ran: its acquiring half ends at
	// fnIn and its releasing half begins at fnOut.
	fnIn, fnOut time.Time
	// before is how long what a row did ahead of its measured call took.
	before  time.Duration
	cancels []context.CancelFunc
}

// acquireCtx is the acquiring context of a call: its deadline is the bound.
func (c *boundCall) acquireCtx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), boundAcquire)
	c.cancels = append(c.cancels, cancel)
	return ctx
}

// deadlineCtx is a context that carries the hold taken for the call and a
// deadline of its own, which comes before the unlock timeout.
func (c *boundCall) deadlineCtx() context.Context {
	ctx, cancel := context.WithTimeout(c.held, boundCallerDeadline)
	c.cancels = append(c.cancels, cancel)
	return ctx
}

// keepIf keeps the hold a call took, to let it go after the fault.
func (c *boundCall) keepIf(err error, let func() error) {
	if err == nil {
		c.keep = append(c.keep, let)
	}
}

// fn is a Do's function: it records when it ran and does nothing.
func (c *boundCall) fn(context.Context) error {
	c.fnIn = time.Now()
	c.fnOut = c.fnIn
	return nil
}

// restart moves the start of the measured call to now, for a row that
// must do something under the fault before the call it measures; the
// log shows how long that took.
func (c *boundCall) restart() {
	c.before = time.Since(c.start)
	c.start = time.Now()
}

// mark flags the cell with flag (once) and notes why, for the log.
func (c *boundCell) mark(flag byte, format string, args ...any) {
	if !strings.ContainsRune(string(c.flags), rune(flag)) {
		c.flags = append(c.flags, flag)
	}
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// setUp makes the cell's primitive and, before the fault, takes and lets
// go of a hold once (so that the connection is made and the scripts are
// loaded, as in a service that has run a while), then takes the hold the
// call needs.
func (c *boundCell) setUp(ctx context.Context) error {
	c.returned = make(chan struct{})
	c.subj = c.prim.make(c.clients, c.name, c.row.need == needFixed)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	warm := c.row.need
	if warm == needNone {
		warm = needHold
	}
	_, let, err := c.prim.hold(ctx, c.subj, warm)
	if err != nil {
		return fmt.Errorf("warm-up hold: %w", err)
	}
	if err := let(); err != nil {
		return fmt.Errorf("warm-up release: %w", err)
	}
	if c.row.need == needNone {
		return nil
	}
	held, let, err := c.prim.hold(ctx, c.subj, c.row.need)
	if err != nil {
		return fmt.Errorf("hold: %w", err)
	}
	c.call.held = held
	if !c.row.releases {
		c.call.keep = append(c.call.keep, let)
	}
	return nil
}

// run makes the cell's call under the fault and measures it.
func (c *boundCell) run() {
	defer close(c.returned)
	c.call.start = time.Now()
	err := c.row.call(c.subj, c.call)
	c.end = time.Now()
	c.took = c.end.Sub(c.call.start)
	c.err = err
	for _, cancel := range c.call.cancels {
		cancel()
	}
}

// judge marks what the call broke: its bound, the error's names, the
// outcome a Redlock's quorum decides. A call that has not returned is hung.
func (c *boundCell) judge() {
	if c.setupErr != nil {
		c.mark(flagSetup, "setup: %v", c.setupErr)
		return
	}
	select {
	case <-c.returned:
	default:
		c.hung = true
		c.mark(flagHung, "not returned %v after the fault ended", boundStraggle)
		return
	}
	r := c.row
	call := c.call
	switch {
	case r.do && !call.fnIn.IsZero():
		if acq := call.fnIn.Sub(call.start); acq > r.bound+boundSlack {
			c.mark(flagOverrun, "acquiring half took %v, bound %v", acq.Round(time.Millisecond), r.bound)
		}
		if rel := c.end.Sub(call.fnOut); rel > r.relBound+boundSlack {
			c.mark(flagOverrun, "releasing half took %v, bound %v", rel.Round(time.Millisecond), r.relBound)
		}
	case c.took > r.bound+boundSlack:
		c.mark(flagOverrun, "took %v, bound %v", c.took.Round(time.Millisecond), r.bound)
	}
	if c.err != nil {
		if why := unnamed(c.err, c.name, r.ops); why != "" {
			c.mark(flagUnnamed, "%s", why)
		}
	}
	switch {
	case r.want == wantSuccess && c.err != nil:
		c.mark(flagOutcome, "want success: the quorum answers")
	case r.want == wantFailure && c.err == nil:
		c.mark(flagOutcome, "want an error: a member does not answer")
	}
}

// unnamed says why err does not name the operation (one of ops) and the
// lock called name, or "" when it does: it must be a *relock.Error whose
// Op and Name say so, and whose text shows both.
func unnamed(err error, name string, ops []string) string {
	var e *relock.Error
	if !errors.As(err, &e) {
		return "not a *relock.Error"
	}
	op := normalOp(e.Op)
	found := false
	for _, want := range ops {
		found = found || op == normalOp(want)
	}
	text := err.Error()
	switch {
	case !found:
		return fmt.Sprintf("Op %q, want one of %v", e.Op, ops)
	case !strings.Contains(e.Name, name):
		return fmt.Sprintf("Name %q, want %q", e.Name, name)
	case !strings.Contains(text, e.Op) || !strings.Contains(text, strconv.Quote(e.Name)):
		return "its text does not show Op and Name"
	}
	return ""
}

// normalOp folds case and drops what is not a letter, so that "ForceUnlock",
// "forceunlock" and "force unlock" are one operation.
func normalOp(op string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return -1
	}, op)
}

// check lets go of the holds the cell kept on purpose (the one taken for
// an inspection, or one a call took), then asks another owner for the
// lock: it must get it at once. Releases and give-backs the calls left in
// the background had boundSettle since the fault ended.
func (c *boundCell) check(ctx context.Context, checkers []redis.UniversalClient) {
	for _, let := range c.call.keep {
		err := retryUntil(5*time.Second, func() error {
			if err := let(); err != nil && !errors.Is(err, lock.ErrLockLost) && !errors.Is(err, lock.ErrNotHeld) {
				return err
			}
			return nil
		})
		if err != nil {
			c.notes = append(c.notes, fmt.Sprintf("letting a kept hold go after the fault: %v", err))
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// A Redlock's Unlock returns once the quorum released and lets the
	// last member go in the background, bounded by the unlock timeout: when
	// the check let a kept hold go that way, it gives that release its
	// bound. The primitives of one server release before Unlock returns.
	var grace time.Duration
	if c.subj.rl != nil && len(c.call.keep) > 0 {
		grace = boundUnlock
	}
	err := retryUntil(grace, func() error { return c.prim.free(cctx, checkers[:c.prim.masters], c.name) })
	if err != nil {
		c.mark(flagLeft, "left held: %v; keys: %s", err, keysNamed(cctx, checkers[:c.prim.masters], c.name))
	}
	if c.subj.rl != nil {
		// What the Lock still runs in the background ends before its
		// clients close.
		_ = c.subj.rl.Drain(cctx)
	}
}

// keysNamed lists the keys of the lock called name on each server, with
// their TTLs: what was left, for the log.
func keysNamed(ctx context.Context, cs []redis.UniversalClient, name string) string {
	var out []string
	for i, c := range cs {
		all, err := c.Keys(ctx, "*").Result()
		if err != nil {
			out = append(out, fmt.Sprintf("server %d: %v", i, err))
			continue
		}
		for _, k := range all {
			if at := strings.Index(k, name); at >= 0 && !continuesName(k[at+len(name):]) {
				out = append(out, fmt.Sprintf("%d:%s(%v)", i, k, c.PTTL(ctx, k).Val()))
			}
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// continuesName reports whether rest, what follows a lock name in a key,
// makes it another name (rwlock.Do and rwlock.Downgrade, lock.Unlock and
// lock.Unlock/ctx): the keys of a lock end with its name, or go on after
// it with "}" or ":".
func continuesName(rest string) bool {
	return rest != "" && rest[0] != '}' && rest[0] != ':'
}

// logLine is the cell's line in the log: its figure and what it broke.
func (c *boundCell) logLine() string {
	head := fmt.Sprintf("%s/%s %s.%s", c.fault, c.client, c.prim.label, c.row.method)
	switch {
	case c.setupErr != nil || c.hung:
		return fmt.Sprintf("%s: %s", head, strings.Join(c.notes, "; "))
	}
	s := fmt.Sprintf("%s: %v (bound %s) err=%v", head, c.took.Round(time.Millisecond), c.row.boundText(), c.err)
	if c.call.before > 0 {
		s += fmt.Sprintf(" (measured after %v of work ahead of it)", c.call.before.Round(time.Millisecond))
	}
	if len(c.notes) > 0 {
		s += " [" + string(c.flags) + ": " + strings.Join(c.notes, "; ") + "]"
	}
	return s
}
