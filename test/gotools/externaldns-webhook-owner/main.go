// One reconciliation of an ExternalDNS instance, made of ExternalDNS's own code: its webhook client
// (sigs.k8s.io/external-dns/provider/webhook) talking to a webhook provider, its TXT registry
// (registry/txt, owner ID -owner) and its planner (plan, policy sync, limited to -domain). It reads
// the desired endpoints as JSON on stdin, lists, plans, applies, lists again through the registry and
// prints the endpoints under -domain with their owner label as JSON. Used by
// test/externaldns-webhook-backend.test.ts as a second owner writing into the provider a Zonekeeper
// backend programs.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/pkg/apis/externaldns"
	"sigs.k8s.io/external-dns/plan"
	"sigs.k8s.io/external-dns/provider/webhook"
	"sigs.k8s.io/external-dns/registry/txt"
)

type record struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	TTL     int64    `json:"ttl,omitempty"`
	Targets []string `json:"targets"`
	Owner   string   `json:"owner,omitempty"`
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8888", "webhook provider URL")
	owner := flag.String("owner", "default", "TXT registry owner ID (--txt-owner-id)")
	prefix := flag.String("txt-prefix", "", "TXT registry prefix (--txt-prefix)")
	domain := flag.String("domain", "", "the domain this instance manages (--domain-filter)")
	flag.Parse()

	var desired []record
	if err := json.NewDecoder(os.Stdin).Decode(&desired); err != nil {
		fail("reading the desired records: %v", err)
	}
	ctx := context.Background()
	cfg := externaldns.NewConfig()
	cfg.WebhookProviderURL = *url
	cfg.WebhookProviderReadTimeout = 5 * time.Second
	cfg.WebhookProviderWriteTimeout = 10 * time.Second
	cfg.TXTOwnerID = *owner
	cfg.TXTPrefix = *prefix
	cfg.ManagedDNSRecordTypes = []string{endpoint.RecordTypeA, endpoint.RecordTypeAAAA, endpoint.RecordTypeCNAME, endpoint.RecordTypeTXT}
	p, err := webhook.New(ctx, cfg, nil)
	if err != nil {
		fail("negotiating with the provider: %v", err)
	}
	reg, err := txt.New(cfg, p)
	if err != nil {
		fail("registry: %v", err)
	}
	filter := endpoint.NewDomainFilter([]string{*domain})
	current, err := reg.Records(ctx)
	if err != nil {
		fail("listing: %v", err)
	}
	var want []*endpoint.Endpoint
	for _, r := range desired {
		want = append(want, endpoint.NewEndpointWithTTL(r.Name, r.Type, endpoint.TTL(r.TTL), r.Targets...))
	}
	if want, err = reg.AdjustEndpoints(want); err != nil {
		fail("adjusting: %v", err)
	}
	pl := &plan.Plan{
		Current:        current,
		Desired:        want,
		Policies:       []plan.Policy{&plan.SyncPolicy{}},
		DomainFilter:   endpoint.MatchAllDomainFilters{filter, reg.GetDomainFilter()},
		ManagedRecords: cfg.ManagedDNSRecordTypes,
		OwnerID:        *owner,
	}
	changes := pl.Calculate().Changes
	if changes.HasChanges() {
		if err := reg.ApplyChanges(ctx, changes); err != nil {
			fail("applying: %v", err)
		}
	}
	after, err := reg.Records(ctx)
	if err != nil {
		fail("listing again: %v", err)
	}
	out := []record{}
	for _, ep := range after {
		if !filter.Match(ep.DNSName) {
			continue
		}
		targets := append([]string{}, ep.Targets...)
		sort.Strings(targets)
		out = append(out, record{Name: ep.DNSName, Type: ep.RecordType, TTL: int64(ep.RecordTTL), Targets: targets, Owner: ep.Labels[endpoint.OwnerLabelKey]})
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

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
