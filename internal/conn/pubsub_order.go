package conn

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A SUBSCRIBE of a channel the user may not access gets one NOPERM reply
// in place of its confirmations (naming no channel on Redis 7.0). Redis
// answers a connection's commands in turn, so a shard keeps its sends in
// order and a refusal fails only the command it answers. The order is lost
// on an unlisted send (go-redis's resubscription, a failed send) or a
// refusal that may answer another command (BUSY, MOVED); the next
// subscription then first unsubscribes a marker channel nobody subscribes,
// and every reply before the marker's answers a send before it. An
// UNSUBSCRIBE, not a PING: its channel's rights are not checked, and a
// loading server runs it.

// markerPatience is how long a marker may go unanswered before another:
// go-redis may redial silently, and the marker's reply then never comes.
const markerPatience = 2 * time.Second

// sendOrder lists a shard's (S)SUBSCRIBEs whose replies are due.
type sendOrder struct {
	known  bool       // sends lists every (S)SUBSCRIBE whose reply is due
	sends  [][]string // the channels of each not yet confirmed, oldest first
	marker string     // the last marker sent, until its reply; "" for none
	sentAt time.Time  // when marker was sent
	stale  bool       // the order was lost after marker was sent
	seq    uint64     // markers made, which names each apart
}

// sent records a written (S)SUBSCRIBE of chans, if the order or a marker
// can place it.
func (o *sendOrder) sent(chans ...string) {
	if o.known || o.marker != "" {
		o.sends = append(o.sends, slices.Clone(chans))
	}
}

// sentOrLost is sent, or lose when the write failed (a redial may follow).
func (o *sendOrder) sentOrLost(err error, chans ...string) {
	if err != nil {
		o.lose()
		return
	}
	o.sent(chans...)
}

// lose forgets the order: an unlisted command went, or a reply is unplaced.
func (o *sendOrder) lose() { o.known, o.sends, o.stale = false, nil, true }

// broken forgets a failed connection's order: its due replies never come.
func (o *sendOrder) broken() { *o = sendOrder{seq: o.seq} }

// needsMarker reports whether a marker is due before the next send.
func (o *sendOrder) needsMarker() bool {
	return !o.known && (o.marker == "" || o.stale || time.Since(o.sentAt) > markerPatience)
}

// awaiting reports whether a marker is on its way and the order was not
// lost since: every reply before the marker's answers a send before it.
func (o *sendOrder) awaiting() bool { return !o.known && o.marker != "" && !o.stale }

// sentSince reports whether ch was sent since the last marker (or while
// the order is known, whether a send of ch is due).
func (o *sendOrder) sentSince(ch string) bool {
	return slices.ContainsFunc(o.sends, func(chans []string) bool { return slices.Contains(chans, ch) })
}

// nextMarker returns a new marker channel in channel's slot, or "" if none.
func (o *sendOrder) nextMarker(channel string) string {
	o.seq++
	tag := channel
	if s := strings.IndexByte(channel, '{'); s >= 0 {
		if e := strings.IndexByte(channel[s+1:], '}'); e > 0 {
			tag = channel[s+1 : s+1+e]
		}
	}
	m := "{" + tag + "}relock_pubsub_order:" + strconv.FormatUint(o.seq, 10)
	if Slot(m) != Slot(channel) {
		return ""
	}
	return m
}

// marked records marker m's unsubscription (written if err is nil): the
// sends from now on are listed.
func (o *sendOrder) marked(m string, err error) {
	if err != nil {
		o.lose()
		return
	}
	o.marker, o.sentAt, o.sends, o.stale = m, time.Now(), nil, false
}

// answered reports whether ch, an unsubscription's reply, is the last
// marker's; the order is then known, unless lost since. An earlier
// marker's reply is dropped as one nobody counts on.
func (o *sendOrder) answered(ch string) bool {
	if o.marker == "" || ch != o.marker {
		return false
	}
	o.marker = ""
	o.known = !o.stale
	return true
}

// confirmed takes ch out of the oldest send that has it, while the order
// is known (else it may answer a send made before the marker).
func (o *sendOrder) confirmed(ch string) {
	if !o.known {
		return
	}
	for i, chans := range o.sends {
		if j := slices.Index(chans, ch); j >= 0 {
			if len(chans) == 1 {
				o.sends = slices.Delete(o.sends, i, i+1)
			} else {
				o.sends[i] = slices.Delete(chans, j, j+1)
			}
			return
		}
	}
}

// refused pops the channels of the oldest send, which a refusal answers,
// or reports false when the order is unknown.
func (o *sendOrder) refused() ([]string, bool) {
	if !o.known || len(o.sends) == 0 {
		return nil, false
	}
	chans := o.sends[0]
	o.sends = slices.Delete(o.sends, 0, 1)
	return chans, true
}

// channelRefusal reports a refusal of a (S)SUBSCRIBE's channels (Redis
// 7.0's words, 7.2's, then Valkey 8's); no server checks an
// unsubscription's.
func channelRefusal(msg string) bool {
	return strings.HasPrefix(msg, "NOPERM") &&
		(strings.Contains(msg, "one of the channels used as arguments") || strings.HasSuffix(msg, "' channel") ||
			strings.HasSuffix(msg, "access a channel"))
}

// markLocked sends a marker in channel's slot if s's order is lost.
func (ps *PubSub) markLocked(ctx context.Context, s *shard, channel string) error {
	if !s.order.needsMarker() {
		return nil
	}
	m := s.order.nextMarker(channel)
	if m == "" {
		return nil
	}
	var err error
	if s.ssub {
		err = s.ps.SUnsubscribe(ctx, m)
	} else {
		err = s.ps.Unsubscribe(ctx, m)
	}
	s.order.marked(m, err)
	return err
}

// refusedInOrderLocked fails the subscriptions of the send a NOPERM
// answers, or reports false if it cannot place it. With a marker on its
// way, the sends before the marker fail and later ones wait on.
func (ps *PubSub) refusedInOrderLocked(s *shard, err error, msg string) bool {
	if !channelRefusal(msg) {
		return false
	}
	if chans, ok := s.order.refused(); ok {
		for _, ch := range chans {
			if st := s.chans[ch]; st != nil { // nil: cancelled since
				ps.failLocked(ch, st, err, true)
			}
		}
		return true
	}
	if !s.order.awaiting() {
		return false
	}
	for ch, st := range s.chans {
		if !st.refused && !s.order.sentSince(ch) { // refused: sent again anyway
			ps.failLocked(ch, st, err, true)
		}
	}
	return true
}
