package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// proxies are the toxiproxy proxies between each worker and each data
// server, in this process: a fault can cut or slow one worker's link to one
// server while the others stay up.
type proxies struct {
	srv *toxiproxy.ApiServer
	mu  sync.Mutex
	by  map[string]*toxiproxy.Proxy // "worker|server id"
}

func newProxies() *proxies {
	return &proxies{srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		by: map[string]*toxiproxy.Proxy{}}
}

func proxyKey(worker, server string) string { return worker + "|" + server }

// add starts a proxy from a free loopback port to upstream and returns its
// address.
func (ps *proxies) add(worker, server, upstream string) (string, error) {
	p := toxiproxy.NewProxy(ps.srv, proxyKey(worker, server), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return "", fmt.Errorf("proxy %s to %s: %w", worker, server, err)
	}
	ps.mu.Lock()
	ps.by[proxyKey(worker, server)] = p
	ps.mu.Unlock()
	return p.Listen, nil
}

func (ps *proxies) get(worker, server string) (*toxiproxy.Proxy, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.by[proxyKey(worker, server)]
	if !ok {
		return nil, fmt.Errorf("no proxy from %s to %s", worker, server)
	}
	return p, nil
}

// toxic adds a toxic of type typ with the attributes given, both ways.
func (ps *proxies) toxic(worker, server, typ string, attrs string) error {
	p, err := ps.get(worker, server)
	if err != nil {
		return err
	}
	for _, stream := range []string{"upstream", "downstream"} {
		js := fmt.Sprintf(`{"name":"%s_%s","type":%q,"stream":%q,"attributes":{%s}}`, typ, stream, typ, stream, attrs)
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return fmt.Errorf("toxic %s on %s->%s: %w", typ, worker, server, err)
		}
	}
	return nil
}

// clear removes every toxic of the link.
func (ps *proxies) clear(worker, server string) error {
	p, err := ps.get(worker, server)
	if err != nil {
		return err
	}
	p.Toxics.ResetToxics(context.Background())
	return nil
}

// down stops the proxy: its connections close and new ones are refused.
func (ps *proxies) down(worker, server string) error {
	p, err := ps.get(worker, server)
	if err != nil {
		return err
	}
	p.Stop()
	return nil
}

// up listens again on the same port.
func (ps *proxies) up(worker, server string) error {
	p, err := ps.get(worker, server)
	if err != nil {
		return err
	}
	var last error
	for range 20 { // the port may linger a moment after Stop
		if last = p.Start(); last == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("proxy %s->%s up: %w", worker, server, last)
}

func (ps *proxies) stopAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.by {
		p.Stop()
	}
}
