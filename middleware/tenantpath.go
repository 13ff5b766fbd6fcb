package middleware

import (
	"fmt"
	"strings"
)

// tenantTemplate is a tenant path template in the syntax of a2a-go's
// a2asrv.NewTenantRESTHandler: path segments, '*' matching any one segment, and one
// capture group {…} whose segments are the tenant, joined with '/'.
type tenantTemplate struct {
	segments []string
	// capture is segments[from:to].
	from, to int
}

// parseTenantTemplate parses a template as a2a-go does ("/{*}",
// "/locations/*/projects/{*}", "/{locations/*/projects/*}"), and refuses what a2a-go
// refuses (no capture group, more than one, braces out of order) and an empty capture
// group, which would put every tenant in one scope.
func parseTenantTemplate(raw string) (tenantTemplate, error) {
	open, closing := strings.IndexByte(raw, '{'), strings.IndexByte(raw, '}')
	switch {
	case open < 0 || closing < 0:
		return tenantTemplate{}, fmt.Errorf("no capture group {} in %q", raw)
	case open > closing:
		return tenantTemplate{}, fmt.Errorf("invalid capture group in %q", raw)
	case strings.LastIndexByte(raw, '{') != open || strings.LastIndexByte(raw, '}') != closing:
		return tenantTemplate{}, fmt.Errorf("more than one capture group in %q", raw)
	}
	var t tenantTemplate
	t.segments = appendSegments(t.segments, raw[:open])
	t.from = len(t.segments)
	t.segments = appendSegments(t.segments, raw[open+1:closing])
	t.to = len(t.segments)
	t.segments = appendSegments(t.segments, raw[closing+1:])
	if t.from == t.to {
		return tenantTemplate{}, fmt.Errorf("empty capture group in %q", raw)
	}
	return t, nil
}

// appendSegments appends the non-empty '/'-separated segments of s.
func appendSegments(segs []string, s string) []string {
	for seg := range strings.SplitSeq(s, "/") {
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	return segs
}

// match matches the start of path against t and returns the captured tenant, as
// a2a-go's handler does; segments of path past the template's are left alone.
func (t tenantTemplate) match(path string) (string, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) < len(t.segments) {
		return "", false
	}
	for i, want := range t.segments {
		if want != "*" && want != segs[i] {
			return "", false
		}
	}
	return strings.Join(segs[t.from:t.to], "/"), true
}
