// Drives ExternalDNS's own rfc2136 provider (sigs.k8s.io/external-dns/provider/rfc2136) against a DNS
// server: lists the zone (AXFR with TSIG), plans the change from the current records to the desired
// endpoints read as JSON on stdin (ExternalDNS's plan package, policy sync, limited to -domain), applies
// it with RFC 2136 UPDATE (TSIG), lists again, and prints the endpoints under -domain as JSON.
// Used by test/externaldns-rfc2136.test.ts.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"

	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/pkg/apis/externaldns"
	"sigs.k8s.io/external-dns/plan"
	"sigs.k8s.io/external-dns/provider/rfc2136"
)

type record struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	TTL     int64    `json:"ttl,omitempty"`
	Targets []string `json:"targets"`
}

func main() {
	host := flag.String("server", "127.0.0.1", "server address")
	port := flag.Int("port", 53, "server port")
	zone := flag.String("zone", "", "zone")
	domain := flag.String("domain", "", "the domain ExternalDNS manages (domain filter)")
	key := flag.String("key", "", "TSIG key name")
	secret := flag.String("secret", "", "TSIG secret (base64)")
	alg := flag.String("alg", "hmac-sha256", "TSIG algorithm")
	flag.Parse()

	var desired []record
	if err := json.NewDecoder(os.Stdin).Decode(&desired); err != nil {
		fail("reading the desired records: %v", err)
	}
	cfg := &externaldns.Config{
		RFC2136Host:            []string{*host},
		RFC2136Port:            *port,
		RFC2136Zone:            []string{*zone},
		RFC2136TSIGKeyName:     *key,
		RFC2136TSIGSecret:      *secret,
		RFC2136TSIGSecretAlg:   *alg,
		RFC2136AXFR:            true,
		RFC2136BatchChangeSize: 50,
		Policy:                 "sync",
	}
	filter := endpoint.NewDomainFilter([]string{*domain})
	ctx := context.Background()
	p, err := rfc2136.New(ctx, cfg, filter)
	if err != nil {
		fail("provider: %v", err)
	}
	current, err := p.Records(ctx)
	if err != nil {
		fail("listing the zone: %v", err)
	}
	var want []*endpoint.Endpoint
	for _, r := range desired {
		ep := endpoint.NewEndpointWithTTL(r.Name, r.Type, endpoint.TTL(r.TTL), r.Targets...)
		want = append(want, ep)
	}
	pl := &plan.Plan{
		Current:        inDomain(current, filter),
		Desired:        want,
		Policies:       []plan.Policy{&plan.SyncPolicy{}},
		DomainFilter:   endpoint.MatchAllDomainFilters{filter},
		ManagedRecords: []string{endpoint.RecordTypeA, endpoint.RecordTypeAAAA, endpoint.RecordTypeCNAME, endpoint.RecordTypeTXT},
	}
	changes := pl.Calculate().Changes
	if err := p.ApplyChanges(ctx, changes); err != nil {
		fail("applying: %v", err)
	}
	after, err := p.Records(ctx)
	if err != nil {
		fail("listing the zone again: %v", err)
	}
	out := []record{}
	for _, ep := range inDomain(after, filter) {
		targets := append([]string{}, ep.Targets...)
		sort.Strings(targets)
		out = append(out, record{Name: ep.DNSName, Type: ep.RecordType, TTL: int64(ep.RecordTTL), Targets: targets})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Type < out[j].Type
	})
	summary := map[string]any{
		"create": len(changes.Create), "updateNew": len(changes.UpdateNew), "delete": len(changes.Delete), "records": out,
	}
	if err := json.NewEncoder(os.Stdout).Encode(summary); err != nil {
		fail("%v", err)
	}
}

func inDomain(eps []*endpoint.Endpoint, filter *endpoint.DomainFilter) []*endpoint.Endpoint {
	var out []*endpoint.Endpoint
	for _, ep := range eps {
		if filter.Match(ep.DNSName) {
			out = append(out, ep)
		}
	}
	return out
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
