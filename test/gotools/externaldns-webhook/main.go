// Drives a webhook provider with ExternalDNS's own code: the webhook client
// (sigs.k8s.io/external-dns/provider/webhook) negotiates with the provider at -url and reads its domain
// filter, the TXT registry (registry/txt) keeps ownership under -owner, and the planner (plan, policy
// sync or upsert-only) computes the changes from what the registry lists to the desired endpoints read
// as JSON on stdin; the registry applies them (POST /records) and lists again. That is one pass of
// ExternalDNS's control loop (controller.RunOnce) without its Kubernetes sources; -passes runs it more
// than once (a second pass of a converged state plans no changes).
//
// Prints JSON: the domain filter, the endpoints after AdjustEndpoints, the changes of each pass, and
// the endpoints the registry lists at the end (with their owner labels). Used by
// test/externaldns-webhook.test.ts and test/externaldns-webhook-kubernetes.test.ts.
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

type pass struct {
	Create    []*endpoint.Endpoint `json:"create"`
	UpdateOld []*endpoint.Endpoint `json:"updateOld"`
	UpdateNew []*endpoint.Endpoint `json:"updateNew"`
	Delete    []*endpoint.Endpoint `json:"delete"`
	Error     string               `json:"error,omitempty"`
}

type output struct {
	DomainFilter json.RawMessage      `json:"domainFilter"`
	Adjusted     []*endpoint.Endpoint `json:"adjusted"`
	Passes       []pass               `json:"passes"`
	Records      []*endpoint.Endpoint `json:"records"`
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8888", "the webhook provider")
	owner := flag.String("owner", "default", "the TXT registry's owner ID (--txt-owner-id)")
	prefix := flag.String("txt-prefix", "", "the TXT registry's prefix (--txt-prefix)")
	policy := flag.String("policy", "sync", "sync or upsert-only (--policy)")
	domain := flag.String("domain-filter", "", "ExternalDNS's own --domain-filter, besides the provider's")
	passes := flag.Int("passes", 1, "how many passes of the control loop")
	flag.Parse()

	var desired []*endpoint.Endpoint
	if err := json.NewDecoder(os.Stdin).Decode(&desired); err != nil {
		fail("reading the desired endpoints: %v", err)
	}
	ctx := context.Background()
	cfg := &externaldns.Config{
		WebhookProviderURL:          *url,
		WebhookProviderReadTimeout:  10 * time.Second,
		WebhookProviderWriteTimeout: 10 * time.Second,
		WebhookProviderMaxBodySize:  5 << 20,
		TXTOwnerID:                  *owner,
		TXTPrefix:                   *prefix,
		TXTWildcardReplacement:      "any",
		ManagedDNSRecordTypes:       []string{"A", "AAAA", "CNAME", "TXT", "MX", "SRV", "NS"},
	}
	p, err := webhook.New(ctx, cfg, nil)
	if err != nil {
		fail("webhook provider: %v", err)
	}
	reg, err := txt.New(cfg, p)
	if err != nil {
		fail("TXT registry: %v", err)
	}
	var out output
	if out.DomainFilter, err = json.Marshal(p.GetDomainFilter()); err != nil {
		fail("domain filter: %v", err)
	}
	var filters endpoint.MatchAllDomainFilters
	filters = append(filters, reg.GetDomainFilter())
	if *domain != "" {
		filters = append(filters, endpoint.NewDomainFilter([]string{*domain}))
	}
	var pol plan.Policy = &plan.SyncPolicy{}
	if *policy == "upsert-only" {
		pol = &plan.UpsertOnlyPolicy{}
	}
	for i := 0; i < *passes; i++ {
		current, err := reg.Records(ctx)
		if err != nil {
			fail("listing records: %v", err)
		}
		adjusted, err := reg.AdjustEndpoints(clone(desired))
		if err != nil {
			fail("adjusting endpoints: %v", err)
		}
		out.Adjusted = adjusted
		calculated := (&plan.Plan{
			Policies:       []plan.Policy{pol},
			Current:        current,
			Desired:        adjusted,
			DomainFilter:   filters,
			ManagedRecords: cfg.ManagedDNSRecordTypes,
			OwnerID:        reg.OwnerID(),
		}).Calculate()
		c := calculated.Changes
		pa := pass{Create: c.Create, UpdateOld: c.UpdateOld, UpdateNew: c.UpdateNew, Delete: c.Delete}
		if c.HasChanges() {
			if err := reg.ApplyChanges(ctx, c); err != nil {
				pa.Error = err.Error()
			}
		}
		out.Passes = append(out.Passes, pa)
	}
	// The registry caches nothing (no --txt-cache-interval): this lists what the provider holds now.
	records, err := reg.Records(ctx)
	if err != nil {
		fail("listing records: %v", err)
	}
	sort.Slice(records, func(i, j int) bool {
		if records[i].DNSName != records[j].DNSName {
			return records[i].DNSName < records[j].DNSName
		}
		return records[i].RecordType < records[j].RecordType
	})
	out.Records = records
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail("writing the result: %v", err)
	}
}

func clone(eps []*endpoint.Endpoint) []*endpoint.Endpoint {
	out := make([]*endpoint.Endpoint, 0, len(eps))
	for _, e := range eps {
		c := *e
		c.Targets = append(endpoint.Targets(nil), e.Targets...)
		c.Labels = endpoint.NewLabels()
		for k, v := range e.Labels {
			c.Labels[k] = v
		}
		c.ProviderSpecific = append(endpoint.ProviderSpecific(nil), e.ProviderSpecific...)
		out = append(out, &c)
	}
	return out
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "externaldns-webhook: "+format+"\n", args...)
	os.Exit(1)
}
