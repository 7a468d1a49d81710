package main

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// The -rtt sweep: the rows below, run at each round-trip time of the list
// through an in-process toxiproxy per redis-server, on loopback.

// rttScenarios maps the scenarios of the sweep to their short names.
var rttScenarios = map[string]string{
	sc1g:      "u1",
	sc64g:     "64g",
	scOneKey:  "onekey",
	scRedlock: "redlock",
	// A new Redlock per acquisition, as a request handler builds it.
	scRedlockNew: "redlock-new",
}

// rowName is a row's scenario as printed: unchanged on loopback without
// -rtt, else the short name at the distance ("u1@1ms").
func rowName(scenario string, at *time.Duration) string {
	if at == nil {
		return scenario
	}
	short := rttScenarios[scenario]
	if short == "" {
		short = scenario
	}
	return short + "@" + fmtRTT(*at)
}

// parseRTT reads the -rtt list: durations (a bare 0 for loopback), sorted
// and without repeats, as the charts' x axis wants them.
func parseRTT(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []time.Duration
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		d, err := time.ParseDuration(f)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("bad round-trip time %q", f)
		}
		// The toxic delays each way by rtt/2 in whole microseconds.
		if d > 0 && d < 2*time.Microsecond {
			return nil, fmt.Errorf("round-trip time %q below 2µs", f)
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// fmtRTT prints a distance in milliseconds, as -rtt takes it: 0, 0.2ms, 1ms.
func fmtRTT(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
}

// rttRows is the plan of the sweep: the sweep's rows at every distance,
// nearest first, filtered by -only on the short name ("u1@1ms/relock")
// or the long one ("1g-distinct@1ms/relock").
func rttRows(cfg *config) []rowSpec {
	var base []rowSpec
	for _, r := range allRows(cfg) {
		if rttScenarios[r.scenario] != "" {
			base = append(base, r)
		}
	}
	var plan []rowSpec
	for _, d := range cfg.rtts {
		for _, r := range base {
			r.at = &d
			long := r.scenario + "@" + fmtRTT(d) + "/" + r.label
			if cfg.only == nil || cfg.only.MatchString(r.name()+"/"+r.label) || cfg.only.MatchString(long) {
				plan = append(plan, r)
			}
		}
	}
	return plan
}

// usLatency delays every chunk by Latency microseconds after it was read:
// toxiproxy's own latency toxic counts whole milliseconds, too coarse for
// a 0.2 ms round trip. Chunks keep their spacing, so pipelined commands
// are not serialised behind each other's delay.
type usLatency struct {
	Latency int64 `json:"latency_us"`
}

func (t *usLatency) GetBufferSize() int { return 1024 }

func (t *usLatency) Pipe(stub *toxics.ToxicStub) {
	delay := time.Duration(t.Latency) * time.Microsecond
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			waitUntil(c.Timestamp.Add(delay))
			select {
			case stub.Output <- c:
			case <-stub.Interrupt:
				stub.Output <- c // no data dropped on removal
				return
			}
		}
	}
}

// The toxics of every proxy wait on one delay line: a goroutine that
// sleeps on a timer until a deadline is near, then spins with yields to
// it. A Go timer alone wakes about 1 ms late when the process idles (the
// netpoller waits in whole milliseconds), which would add 2 ms to every
// round trip; a sleeping syscall per chunk holds a P until sysmon takes
// it back, which serialised the 64-goroutine rows. One spinner costs at
// most one core's share, and the client CPU column counts it.
type delayLine struct {
	mu   sync.Mutex
	q    waits
	wake chan struct{}
}

type wait struct {
	at   time.Time
	done chan struct{}
}

// waits is a min-heap of waits by deadline.
type waits []wait

func (w waits) Len() int           { return len(w) }
func (w waits) Less(i, j int) bool { return w[i].at.Before(w[j].at) }
func (w waits) Swap(i, j int)      { w[i], w[j] = w[j], w[i] }
func (w *waits) Push(x any)        { *w = append(*w, x.(wait)) }
func (w *waits) Pop() any {
	old := *w
	x := old[len(old)-1]
	*w = old[:len(old)-1]
	return x
}

// spinAhead is how far ahead of a deadline the line stops sleeping on a
// timer and spins: more than a timer's lateness.
const spinAhead = 1500 * time.Microsecond

var line = sync.OnceValue(func() *delayLine {
	l := &delayLine{wake: make(chan struct{}, 1)}
	go l.run()
	return l
})

// waitUntil returns at t, give or take a few microseconds.
func waitUntil(t time.Time) {
	if !time.Now().Before(t) {
		return
	}
	l := line()
	done := make(chan struct{})
	l.mu.Lock()
	heap.Push(&l.q, wait{at: t, done: done})
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-done
}

func (l *delayLine) run() {
	for {
		now := time.Now()
		l.mu.Lock()
		for len(l.q) > 0 && !now.Before(l.q[0].at) {
			close(heap.Pop(&l.q).(wait).done)
		}
		next := time.Duration(-1)
		if len(l.q) > 0 {
			next = l.q[0].at.Sub(now)
		}
		l.mu.Unlock()
		switch {
		case next < 0: // nothing waits
			<-l.wake
		case next > spinAhead:
			t := time.NewTimer(next - spinAhead)
			select {
			case <-t.C:
			case <-l.wake:
				t.Stop()
			}
		default:
			runtime.Gosched()
		}
	}
}

const usLatencyType = "latency_us"

func init() { toxics.Register(usLatencyType, new(usLatency)) }

// toxiServer hosts the proxies; its metrics and logs are off.
var toxiServer = sync.OnceValue(func() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
})

// startProxy starts a proxy on a free loopback port to upstream, adding
// rtt/2 each way.
func startProxy(upstream string, rtt time.Duration) (*toxiproxy.Proxy, error) {
	p := toxiproxy.NewProxy(toxiServer(), "redis-"+upstream+"@"+fmtRTT(rtt), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("toxiproxy to %s: %w", upstream, err)
	}
	for _, stream := range []string{"upstream", "downstream"} {
		js := fmt.Sprintf(`{"name":"latency_%s","type":%q,"stream":%q,"attributes":{"latency_us":%d}}`,
			stream, usLatencyType, stream, (rtt / 2).Microseconds())
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			p.Stop()
			return nil, fmt.Errorf("latency toxic: %w", err)
		}
	}
	return p, nil
}

// via is n as seen through a proxy at rtt: the same server, new clients.
func (n *node) via(rtt time.Duration) (*node, error) {
	p, err := startProxy(n.srv.Addr, rtt)
	if err != nil {
		return nil, err
	}
	// Start has set Listen to the port it bound.
	addr := p.Listen
	return &node{srv: n.srv, proxy: p, addr: addr, sha: n.sha, version: n.version,
		raw: newGoRedis(addr), relock: newGoRedis(addr), redsync: newGoRedis(addr), bsm: newGoRedis(addr)}, nil
}

// at returns the env whose clients reach the servers at rtt, made on
// first use; rtt 0 is e itself. FLUSHALL stays on e's direct clients.
func (e *env) at(ctx context.Context, rtt time.Duration) (*env, error) {
	if rtt == 0 {
		return e, nil
	}
	if v := e.views[rtt]; v != nil {
		return v, nil
	}
	v := &env{cfg: e.cfg, dir: e.dir}
	var err error
	if v.single, err = e.single.via(rtt); err != nil {
		return nil, err
	}
	for _, m := range e.masters {
		pm, err := m.via(rtt)
		if err != nil {
			v.close()
			return nil, err
		}
		v.masters = append(v.masters, pm)
	}
	if v.rueidis, err = newRueidisLocker(v.single.addr, e.cfg.noLoop); err != nil {
		v.close()
		return nil, fmt.Errorf("rueidislock at %s: %w", fmtRTT(rtt), err)
	}
	if err := v.single.raw.Ping(ctx).Err(); err != nil {
		v.close()
		return nil, errors.Join(fmt.Errorf("PING through the proxy at %s", fmtRTT(rtt)), err)
	}
	if e.views == nil {
		e.views = map[time.Duration]*env{}
	}
	e.views[rtt] = v
	return v, nil
}
