package conn

import (
	"slices"
	"strings"
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
// ever. The next subscription sends a PING first: every reply before its
// PONG answers a command sent before it, so the order is known again
// from the PONG on, with the sends made since the PING.

// sendOrder lists a shard's (S)SUBSCRIBEs whose replies are due.
type sendOrder struct {
	known bool       // sends lists every (S)SUBSCRIBE whose reply is due
	sends [][]string // the channels of each not yet confirmed, oldest first
	pings int        // PINGs sent whose PONG is due
	stale bool       // the order was lost after the last PING was sent
}

// sent records a (S)SUBSCRIBE of chans, written on the connection.
func (o *sendOrder) sent(chans ...string) {
	o.sends = append(o.sends, slices.Clone(chans))
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

// broken forgets the order of a connection that failed: the PONGs due on
// it never come.
func (o *sendOrder) broken() { *o = sendOrder{} }

// needsPing reports whether a PING is due before the next send.
func (o *sendOrder) needsPing() bool { return !o.known && (o.pings == 0 || o.stale) }

// pinged records a PING written on the connection: the sends from now on
// are listed.
func (o *sendOrder) pinged() { o.pings, o.sends, o.stale = o.pings+1, nil, false }

// pingedOrLost is pinged, or lose when the PING could not be written
// (err): the connection may have been redialled.
func (o *sendOrder) pingedOrLost(err error) {
	if err != nil {
		o.lose()
		return
	}
	o.pinged()
}

// ponged records a PONG: at the last one due, the order is known, unless
// it was lost since its PING.
func (o *sendOrder) ponged() {
	if o.pings == 0 {
		return
	}
	o.pings--
	if o.pings == 0 && !o.stale {
		o.known = true
	}
}

// confirmed takes ch out of the oldest send that has it: a channel's
// confirmation answers its oldest SUBSCRIBE still due.
func (o *sendOrder) confirmed(ch string) {
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
// rights: NOPERM, which no other command a shard sends can get (Redis
// does not check the rights of an unsubscription).
func channelRefusal(msg string) bool {
	return strings.HasPrefix(msg, "NOPERM") && strings.Contains(msg, "channel")
}

// pingRefusal reports a refusal of the PING a shard sends to find its
// order again (a user without +ping): it answers the PING all the same.
func pingRefusal(msg string) bool {
	return strings.HasPrefix(msg, "NOPERM") && strings.Contains(msg, "'ping'")
}

// refusedInOrderLocked handles a refusal that the order places: a PING's,
// which stands for its PONG, or one for a channel's rights, which fails
// the subscriptions of the send it answers. It reports false when it
// cannot place the refusal.
func (ps *PubSub) refusedInOrderLocked(s *shard, err error, msg string) bool {
	if pingRefusal(msg) {
		s.order.ponged()
		return true
	}
	if !channelRefusal(msg) {
		return false
	}
	chans, ok := s.order.refused()
	if !ok {
		return false
	}
	for _, ch := range chans {
		st := s.chans[ch]
		if st == nil {
			continue // cancelled since
		}
		for _, p := range st.pending {
			p.err = err
			close(p.ready)
		}
		st.pending = nil
	}
	return true
}
