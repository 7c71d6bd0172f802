// ExternalDNS's control loop built from its own packages, against a real API server: its flags
// (pkg/apis/externaldns, e.g. --source=service --source=ingress --source=crd --kubeconfig ...), its
// sources and their wrappers (source, source/wrappers), the webhook provider client (provider/webhook),
// the registry (registry/factory: txt) and the planner (plan). One pass of what controller.RunOnce does
// — list the registry, read the sources, adjust, plan, apply — then print the changes as JSON and exit
// (ExternalDNS's own --once).
//
// The controller package itself does not build here: it imports provider/factory, which imports cloud
// providers whose modules the Go module proxy does not serve (github.com/civo/civogo,
// github.com/exoscale/egoscale/v3). Used by test/externaldns-kubernetes.test.ts.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/pkg/apis/externaldns"
	"sigs.k8s.io/external-dns/plan"
	"sigs.k8s.io/external-dns/provider"
	"sigs.k8s.io/external-dns/provider/webhook"
	registryfactory "sigs.k8s.io/external-dns/registry/factory"
	"sigs.k8s.io/external-dns/source"
	"sigs.k8s.io/external-dns/source/annotations"
	"sigs.k8s.io/external-dns/source/wrappers"
)

type result struct {
	Desired []*endpoint.Endpoint `json:"desired"`
	Changes *plan.Changes        `json:"changes"`
}

func main() {
	cfg := externaldns.NewConfig()
	if err := cfg.ParseFlags(os.Args[1:]); err != nil {
		fail("flags: %v", err)
	}
	if cfg.Provider != "webhook" {
		fail("only --provider=webhook is built into this program")
	}
	// As ExternalDNS's main does, before any source is built.
	annotations.SetAnnotationPrefix(cfg.AnnotationPrefix)
	if cfg.EnableLegacyAnnotationPrefix {
		annotations.SetLegacyAnnotationPrefix(annotations.LegacyAnnotationPrefix)
	}
	ctx := context.Background()
	sCfg, err := source.NewSourceConfig(cfg)
	if err != nil {
		fail("source config: %v", err)
	}
	src, err := wrappers.Build(ctx, sCfg)
	if err != nil {
		fail("sources: %v", err)
	}
	p, err := webhook.New(ctx, cfg, nil)
	if err != nil {
		fail("webhook provider: %v", err)
	}
	reg, err := registryfactory.Select(cfg, p)
	if err != nil {
		fail("registry: %v", err)
	}
	policy, ok := plan.Policies[cfg.Policy]
	if !ok {
		fail("unknown policy %s", cfg.Policy)
	}
	filter := endpoint.NewDomainFilterWithOptions(
		endpoint.WithDomainFilter(cfg.DomainFilter),
		endpoint.WithDomainExclude(cfg.DomainExclude),
	)
	// What controller.RunOnce does, step by step.
	current, err := reg.Records(ctx)
	if err != nil {
		fail("registry records: %v", err)
	}
	ctx = context.WithValue(ctx, provider.RecordsContextKey, current)
	desired, err := src.Endpoints(ctx)
	if err != nil {
		fail("source endpoints: %v", err)
	}
	adjusted, err := reg.AdjustEndpoints(desired)
	if err != nil {
		fail("adjusting endpoints: %v", err)
	}
	calculated := (&plan.Plan{
		Policies:       []plan.Policy{policy},
		Current:        current,
		Desired:        adjusted,
		DomainFilter:   endpoint.MatchAllDomainFilters{filter, reg.GetDomainFilter()},
		ManagedRecords: cfg.ManagedDNSRecordTypes,
		ExcludeRecords: cfg.ExcludeDNSRecordTypes,
		OwnerID:        reg.OwnerID(),
		OldOwnerID:     cfg.TXTOwnerOld,
	}).Calculate()
	if calculated.Changes.HasChanges() {
		if err := reg.ApplyChanges(ctx, calculated.Changes); err != nil {
			fail("applying changes: %v", err)
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(result{Desired: adjusted, Changes: calculated.Changes}); err != nil {
		fail("writing the result: %v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "externaldns-controller: "+format+"\n", args...)
	os.Exit(1)
}
