package conn

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Redis answers the commands of a connection in turn. A SUBSCRIBE of a
// channel the user may not access gets one error reply (NOPERM) in the
// place of its confirmations, and Redis 7.0's names no channel. A shard
// keeps its sends in order, so that such a refusal fails the
// subscriptions of the command it answers alone: another channel's, sent
// after it and still waiting for its confirmation, stays. The order is
// lost when a command is sent that it does not list (go-redis's own
// resubscription after a reconnect, a send that failed) or a refusal may
// answer another command (BUSY, MOVED): a refusal then fails every
// subscription waiting, as before, rather than leave one waiting for
// ever, or, when a marker is on its way, every subscription sent before
// it. The next subscription first unsubscribes a marker channel that
// nobody subscribes: every reply before the marker's answers a command
// sent before it, so the order is known again from that reply on, with
// the sends made since. An unsubscription is the marker, not a PING: its
// channel is not checked against the user's rights, and a server that
// is loading its data runs it, as it runs the SUBSCRIBE after it.

// markerPatience is how long a marker may go unanswered before another is
// sent: go-redis may redial a connection without an error reaching the
// receiving goroutine (a hand-off), and the marker's reply then never
// comes.
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

// sent records a (S)SUBSCRIBE of chans, written on the connection: one
// sent while the order is lost and no marker is on its way says nothing.
func (o *sendOrder) sent(chans ...string) {
	if o.known || o.marker != "" {
		o.sends = append(o.sends, slices.Clone(chans))
	}
}

// sentOrLost records a (S)SUBSCRIBE of chans, or loses the order when it
// could not be written (err): the connection may have been redialled.
func (o *sendOrder) sentOrLost(err error, chans ...string) {
	if err != nil {
		o.lose()
		return
	}
	o.sent(chans...)
}

// lose forgets the order: a command it does not list was sent, or a
// reply came that it cannot place.
func (o *sendOrder) lose() { o.known, o.sends, o.stale = false, nil, true }

// broken forgets the order of a connection that failed: the replies due
// on it never come.
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

// nextMarker returns a new marker channel in channel's cluster slot, or
// "" when it cannot make one there.
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

// marked records marker m's unsubscription, written on the connection
// (err nil): the sends from now on are listed.
func (o *sendOrder) marked(m string, err error) {
	if err != nil {
		o.lose()
		return
	}
	o.marker, o.sentAt, o.sends, o.stale = m, time.Now(), nil, false
}

// answered reports whether ch, an unsubscription's reply, is the last
// marker's; the order is then known, unless it was lost since the
// marker was sent. An earlier marker's reply is taken for the reply of
// an unsubscription nobody counts on, and dropped as such.
func (o *sendOrder) answered(ch string) bool {
	if o.marker == "" || ch != o.marker {
		return false
	}
	o.marker = ""
	o.known = !o.stale
	return true
}

// confirmed takes ch out of the oldest send that has it: a channel's
// confirmation answers its oldest SUBSCRIBE still due. While the order is
// not known, the confirmation may answer a send made before the marker.
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

// refused returns the channels of the send a refusal answers, the oldest,
// and false when the order is not known.
func (o *sendOrder) refused() ([]string, bool) {
	if !o.known || len(o.sends) == 0 {
		return nil, false
	}
	chans := o.sends[0]
	o.sends = slices.Delete(o.sends, 0, 1)
	return chans, true
}

// channelRefusal reports a refusal of a (S)SUBSCRIBE for its channels'
// rights (Redis 7.0's words, then 7.2's), which no other command a shard
// sends can get: Redis does not check the rights of an unsubscription.
func channelRefusal(msg string) bool {
	return strings.HasPrefix(msg, "NOPERM") &&
		(strings.Contains(msg, "one of the channels used as arguments") || strings.HasSuffix(msg, "' channel"))
}

// markLocked unsubscribes a marker in channel's slot when the order of
// s must be found again, before channel's SUBSCRIBE is sent. The error is
// the marker's write's.
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

// refusedInOrderLocked fails the subscriptions of the send that a
// refusal for its channels' rights answers, and reports false when it
// cannot place the refusal. While a marker is on its way, such a
// refusal answers a send before it (not the marker, an unsubscription):
// the subscriptions sent before it fail, and those since wait on.
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
