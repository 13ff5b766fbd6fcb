package main

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
)

// restMounts are the paths, in the proxy's own path space, at which the upstream's
// agent card says its HTTP+JSON binding is mounted (v1.0 supportedInterfaces with
// protocolBinding HTTP+JSON, v0.3 url/additionalInterfaces with transport
// HTTP+JSON). A send at such a mount is in the key space of the tenant its body
// names, as a JSON-RPC send is, so that a retry over the other binding meets it;
// below a mount, the tenant path templates are matched on what follows the mount.
// The proxy learns them from every card it edits (pointCard), so they follow the
// upstream's card.
type restMounts struct {
	paths atomic.Pointer[[]string]
}

// learn records the HTTP+JSON mounts of card, whose URLs are the upstream's: the
// part of each URL below the upstream's base path, as rewriteCard maps it.
func (m *restMounts) learn(card []byte, upstream *url.URL) {
	if m == nil {
		return
	}
	var c struct {
		SupportedInterfaces []struct {
			URL             string `json:"url"`
			ProtocolBinding string `json:"protocolBinding"`
		} `json:"supportedInterfaces"`
		URL                  string `json:"url"`
		PreferredTransport   string `json:"preferredTransport"`
		AdditionalInterfaces []struct {
			URL       string `json:"url"`
			Transport string `json:"transport"`
		} `json:"additionalInterfaces"`
	}
	if json.Unmarshal(card, &c) != nil {
		return
	}
	var urls []string
	for _, i := range c.SupportedInterfaces {
		if strings.EqualFold(i.ProtocolBinding, "HTTP+JSON") {
			urls = append(urls, i.URL)
		}
	}
	if strings.EqualFold(c.PreferredTransport, "HTTP+JSON") {
		urls = append(urls, c.URL)
	}
	for _, i := range c.AdditionalInterfaces {
		if strings.EqualFold(i.Transport, "HTTP+JSON") {
			urls = append(urls, i.URL)
		}
	}
	base := strings.TrimSuffix(upstream.Path, "/")
	var paths []string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		p := u.Path
		if rest, ok := strings.CutPrefix(p, base); ok && (rest == "" || rest[0] == '/') {
			p = rest
		}
		paths = append(paths, strings.TrimSuffix(p, "/"))
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	m.paths.Store(&paths)
}

// below returns what follows the longest known mount that prefix is at or below,
// and whether there is one: "" for a send at the mount itself.
func (m *restMounts) below(prefix string) (string, bool) {
	if m == nil {
		return "", false
	}
	p := m.paths.Load()
	if p == nil {
		return "", false
	}
	best, found := "", false
	for _, mount := range *p {
		if rest, ok := strings.CutPrefix(prefix, mount); ok && (rest == "" || rest[0] == '/') && (!found || len(mount) > len(best)) {
			best, found = mount, true
		}
	}
	if !found {
		return "", false
	}
	return prefix[len(best):], true
}
