package servercheck

import (
	"context"
	"fmt"
	"strings"
)

// The checks across two interfaces of one card.
var (
	checkCrossInterface = Check{ID: "cross-interface", Spec: "§3 scope",
		Title: "A retry through every other interface of the same tenant (binding or protocol version) gets the first attempt's task"}
	checkTenantScope = Check{ID: "tenant-scope", Spec: "§3 scope",
		Title: "Keys are scoped by tenant: the same key on another tenant's interface is another key"}
)

// across is the separator of the two interfaces of a check across them.
const across = " → "

// checkAcross runs the checks that need two interfaces: a retry through every other
// interface of the same tenant, and a key on two tenants.
func (c *client) checkAcross(ctx context.Context, ifaces []Interface) []Result {
	var out []Result
	var checkable []Interface
	for _, i := range ifaces {
		if i.checkable() {
			checkable = append(checkable, i)
		}
	}
	if c.opts.wanted(checkCrossInterface.ID) {
		for _, group := range byTenant(checkable) {
			out = append(out, c.crossInterface(ctx, group[0], group[1:])...)
		}
	}
	if a, b, ok := pair(checkable); ok && c.opts.wanted(checkTenantScope.ID) {
		r := c.tenantScope(ctx, a, b)
		r.Check, r.Interface = checkTenantScope, a.String()+across+b.String()
		out = append(out, r)
	}
	return out
}

// byTenant groups the interfaces by tenant, in the card's order, keeping the groups
// of two or more.
func byTenant(ifaces []Interface) [][]Interface {
	var groups [][]Interface
	index := map[string]int{}
	for _, i := range ifaces {
		n, ok := index[i.Tenant]
		if !ok {
			n = len(groups)
			index[i.Tenant] = n
			groups = append(groups, nil)
		}
		groups[n] = append(groups[n], i)
	}
	out := groups[:0]
	for _, g := range groups {
		if len(g) > 1 {
			out = append(out, g)
		}
	}
	return out
}

// pair returns two interfaces of two tenants (A2A v1.0 only: v0.3 has none).
func pair(ifaces []Interface) (Interface, Interface, bool) {
	for i, a := range ifaces {
		for _, b := range ifaces[i+1:] {
			if a.Tenant != b.Tenant && a.Version == "1.0" && b.Version == "1.0" {
				return a, b, true
			}
		}
	}
	return Interface{}, Interface{}, false
}

// crossInterface sends a keyed send through first, and its identical retry through
// each of others (interfaces of the same tenant, in other bindings or versions):
// one result for each.
func (c *client) crossInterface(ctx context.Context, first Interface, others []Interface) []Result {
	s := &session{c: c, iface: first}
	snd := s.newSend("cross-interface")
	a, stop := s.firstSend(ctx, snd)
	var out []Result
	for _, b := range others {
		var r Result
		switch {
		case stop != nil:
			r = *stop
		case ctx.Err() != nil:
			r = Result{Status: NotChecked, Detail: "the run's time (Options.Timeout) was up"}
		default:
			r = s.retryThrough(ctx, snd, a, b)
		}
		r.Check, r.Interface = checkCrossInterface, first.String()+across+b.String()
		out = append(out, r)
	}
	return out
}

// retryThrough sends snd, first answered with a through s's interface, again
// through b.
func (s *session) retryThrough(ctx context.Context, snd send, a *answer, b Interface) Result {
	from := s.iface.Binding + " " + s.iface.Version
	to := b.Binding + " " + b.Version
	snd.iface = b
	answers := s.untilProduced(ctx, snd, s.triesFor())
	retry := answers[len(answers)-1]
	switch {
	case retry.err != nil:
		return notChecked(retry, "the retry got no answer")
	case !produced(retry):
		return fail(fmt.Sprintf("the retry through %s of a send answered through %s with %s got %s", to, from, product(a), retry.describe()), a.ex, retry.ex)
	case !sameProduct(a, retry):
		return fail(fmt.Sprintf("the retry through %s got %s, the first attempt through %s %s: the send ran twice (the key's scope is its tenant, whatever the interface)",
			to, product(retry), from, product(a)), a.ex, retry.ex)
	}
	return pass(fmt.Sprintf("the retry through %s got %s, which the first attempt through %s made", to, product(retry), from))
}

// tenantScope sends a key through a, and the same key with another message through
// b, of another tenant: both run.
func (c *client) tenantScope(ctx context.Context, a, b Interface) Result {
	s := &session{c: c, iface: a}
	snd := s.newSend("tenant-scope")
	first, stop := s.firstSend(ctx, snd)
	if stop != nil {
		return *stop
	}
	other := (&session{c: c, iface: b}).newSend("tenant-scope other")
	other.key = snd.key
	second := s.do(ctx, other, nil)
	switch {
	case second.err != nil:
		return notChecked(second, "the send on the other tenant got no answer")
	case second.kind == kindError && strings.Contains(strings.ToLower(second.message), "already held"):
		return fail(fmt.Sprintf("the key of %s on tenant %q is \"already held\" on tenant %q: keys are shared across tenants, so one tenant can block, or probe, another's keys",
			product(first), a.Tenant, b.Tenant), first.ex, second.ex)
	case !produced(second):
		return fail("a keyed send on the other tenant got "+second.describe()+", want a task or a Message", first.ex, second.ex)
	case sameProduct(first, second):
		return fail(fmt.Sprintf("another message with the same key on tenant %q got %s, made for tenant %q", b.Tenant, product(second), a.Tenant), first.ex, second.ex)
	}
	return pass(fmt.Sprintf("the same key ran on tenant %q (%s) and on tenant %q (%s)", a.Tenant, product(first), b.Tenant, product(second)))
}
