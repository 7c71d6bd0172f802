// An ExternalDNS webhook provider built from ExternalDNS's own code: its webhook server
// (sigs.k8s.io/external-dns/provider/webhook/api) around its in-memory provider
// (sigs.k8s.io/external-dns/provider/inmemory), for test/backend-contract-externaldns-webhook.test.ts
// and test/externaldns-webhook-backend.test.ts.
//
// The wrapper adds what a real provider has and the in-memory one lacks: a domain filter answered at
// negotiation (-domain-filter, -exclude) and enforced on writes, record types it can hold (-types:
// AdjustEndpoints drops the others and ApplyChanges refuses them, as providers do), and a lock (the
// in-memory provider is not safe for concurrent requests). It prints "listening <addr>" once it serves.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/plan"
	"sigs.k8s.io/external-dns/provider/inmemory"
	"sigs.k8s.io/external-dns/provider/webhook/api"
)

type provider struct {
	mu     sync.Mutex
	inner  *inmemory.InMemoryProvider
	filter *endpoint.DomainFilter
	types  map[string]bool
}

func (p *provider) holds(ep *endpoint.Endpoint) bool {
	return len(p.types) == 0 || p.types[ep.RecordType]
}

func (p *provider) Records(ctx context.Context) ([]*endpoint.Endpoint, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inner.Records(ctx)
}

func (p *provider) ApplyChanges(ctx context.Context, changes *plan.Changes) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, list := range [][]*endpoint.Endpoint{changes.Create, changes.UpdateOld, changes.UpdateNew, changes.Delete} {
		for _, ep := range list {
			if !p.holds(ep) {
				return fmt.Errorf("record type %s is not supported (%s)", ep.RecordType, ep.DNSName)
			}
			if !p.filter.Match(ep.DNSName) {
				return fmt.Errorf("%s is outside the domain filter", ep.DNSName)
			}
		}
	}
	return p.inner.ApplyChanges(ctx, changes)
}

func (p *provider) AdjustEndpoints(eps []*endpoint.Endpoint) ([]*endpoint.Endpoint, error) {
	out := make([]*endpoint.Endpoint, 0, len(eps))
	for _, ep := range eps {
		if p.holds(ep) {
			out = append(out, ep)
		}
	}
	return out, nil
}

func (p *provider) GetDomainFilter() endpoint.DomainFilterInterface {
	return p.filter
}

func list(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8888", "address to serve the webhook protocol on")
	zones := flag.String("zones", "", "comma-separated zones the in-memory provider holds")
	include := flag.String("domain-filter", "", "comma-separated domain filter (answered at negotiation)")
	exclude := flag.String("exclude", "", "comma-separated excluded domains")
	types := flag.String("types", "", "comma-separated record types the provider holds (empty: all)")
	maxBody := flag.Int64("max-body", 1<<20, "request body limit in bytes")
	flag.Parse()

	if len(list(*zones)) == 0 {
		fmt.Fprintln(os.Stderr, "-zones is required")
		os.Exit(2)
	}
	p := &provider{
		inner:  inmemory.NewInMemoryProvider(inmemory.InMemoryInitZones(list(*zones))),
		filter: endpoint.NewDomainFilterWithExclusions(list(*include), list(*exclude)),
		types:  map[string]bool{},
	}
	for _, t := range list(*types) {
		p.types[strings.ToUpper(t)] = true
	}
	started := make(chan struct{})
	go func() {
		<-started
		fmt.Printf("listening %s\n", *listen)
	}()
	api.StartHTTPApi(api.ServerOptions{
		Provider:          p,
		StartedChan:       started,
		ProviderPort:      *listen,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxBodySize:       *maxBody,
	})
	fmt.Fprintln(os.Stderr, errors.New("server stopped"))
	os.Exit(1)
}
