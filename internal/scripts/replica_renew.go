package scripts

import (
	"context"
	"errors"
	"time"

	"github.com/relock-go/relock/internal/conn"
)

// Renewals is how a pipeline of renewals is synced: a renewal a new master
// missed leaves the hold there at the lease last replicated, so a synced
// hold's renewal counts only once replicas acknowledged it.
type Renewals struct {
	// Node is the server of the pipeline's slot, where the WAIT must go.
	Node conn.Client
	// Want is the replicas the WAIT asks for; 0: none is sent.
	Want int
	// Err is why the renewals cannot be synced (no replica where one was
	// seen, the count unknown): they are sent, and count as failed tries.
	Err error
	srv *server
}

// SyncRenewals plans the sync of renewals of key's slot under p, with the
// replica count Call.Synced uses.
func SyncRenewals(ctx context.Context, c conn.Client, p ReplicaPolicy, key string) Renewals {
	node, srv, err := route(ctx, c, key)
	if errors.Is(err, errUnsupported) {
		return Renewals{}
	}
	if err != nil {
		return Renewals{Err: err}
	}
	n, refresh, err := srv.count(ctx, node, p.Logger)
	if refresh {
		srv.refreshing.Store(false) // an acquisition's round trip reads it
	}
	switch {
	case err != nil:
		return Renewals{Err: err}
	case n == 0 && srv.replicated.Load():
		return Renewals{Err: srv.refuse(node, p)}
	case n == 0:
		return Renewals{}
	}
	return Renewals{Node: node, Want: min(n, max(p.Min, 1)), srv: srv}
}

// Wait is the WAIT to send last on the pipeline (on Node), or zero.
func (r Renewals) Wait(ctx context.Context, timeout time.Duration) conn.Cmd {
	if r.Want == 0 {
		return conn.Cmd{}
	}
	return waitCmd(ctx, r.Want, timeout)
}

// Acked reads the WAIT's reply: nil when the renewals count for a hold
// synced under p, else why not. A short reply has the count read anew.
func (r Renewals) Acked(p ReplicaPolicy, wait conn.Cmd) error {
	if r.Err != nil {
		return r.Err
	}
	if wait.Zero() {
		return nil
	}
	if acks := r.srv.acks(wait, r.Want, p.Timeout); acks.Err != nil || !p.Enough(acks) {
		return p.Err(acks)
	}
	return nil
}
