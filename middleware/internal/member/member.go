// Package member reads the members of a JSON object the way encoding/json's
// struct decoding matches them, in one pass of a plain byte walk over JSON that is
// already known to be valid: the middleware validates an answer once
// (json.Valid, the check json.Unmarshal makes first) and then looks into it, where
// nested json.Unmarshal calls scanned the same bytes again at every level.
//
// What it holds to, against encoding/json (FuzzMembers checks it): a member's name
// matches a field's when the name, unquoted, is the field's name or equal to it
// under Unicode case folding, as encoding/json matches names that way; every
// member is seen, in order, so that the caller can apply encoding/json's rule for
// duplicates (the last one wins, JSON null leaves a string as it was); a string
// value is unquoted as encoding/json unquotes it (invalid UTF-8 becomes U+FFFD).
package member

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Object walks the members of a JSON object.
type Object struct {
	data []byte
	pos  int
}

// Members returns a walk over the members of the JSON object raw, which must be
// valid JSON (json.Valid), with white space around it or not, and reports whether raw
// is an object.
func Members(raw []byte) (Object, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return Object{}, false
	}
	return Object{data: raw, pos: i + 1}, true
}

// Next returns the next member: its name as written (without the quotes, escapes
// kept; see NameIs) and its raw value, or false after the last one.
func (o *Object) Next() (name, value []byte, ok bool) {
	d := o.data
	i := skipSpace(d, o.pos)
	if i < len(d) && d[i] == ',' {
		i = skipSpace(d, i+1)
	}
	if i >= len(d) || d[i] != '"' {
		o.pos = len(d)
		return nil, nil, false
	}
	end := skipString(d, i)
	if end-1 <= i { // no closing quote: not valid JSON
		o.pos = len(d)
		return nil, nil, false
	}
	name = d[i+1 : end-1]
	i = skipSpace(d, end)
	if i >= len(d) || d[i] != ':' {
		o.pos = len(d)
		return nil, nil, false
	}
	i = skipSpace(d, i+1)
	if i >= len(d) {
		o.pos = len(d)
		return nil, nil, false
	}
	end = skipValue(d, i)
	value = d[i:end]
	o.pos = end
	return name, value, true
}

// End returns the offset in raw (as passed to Members) just past the value Next
// returned last.
func (o *Object) End() int { return o.pos }

// NameIs reports whether a member whose name is written as name (see Next) is
// decoded by encoding/json into a struct field named field, when the struct has no
// other field of that name under case folding: the names are equal, or equal once
// folded as encoding/json folds them (fold.go: ASCII letters to upper case, other
// runes to the smallest rune of their Unicode simple folding orbit, so that the
// Kelvin sign is a k and the long s an s).
func NameIs(name []byte, field string) bool {
	if isPlain(name) && isPlain([]byte(field)) {
		return len(name) == len(field) && asciiEqualFold(name, field)
	}
	// Escapes or runes beyond ASCII: unquote as encoding/json does, then fold. Rare.
	q := make([]byte, 0, len(name)+2)
	q = append(append(append(q, '"'), name...), '"')
	var s string
	if json.Unmarshal(q, &s) != nil {
		return false
	}
	return s == field || bytes.Equal(Fold([]byte(s)), Fold([]byte(field)))
}

// Fold folds a member name as encoding/json does to match it to a field (its
// foldName): two names match when their folds are equal.
func Fold(in []byte) []byte {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		if c := in[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(in[i:])
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		out = utf8.AppendRune(out, r)
		i += n
	}
	return out
}

// String returns the JSON string value raw unquoted as encoding/json unquotes it,
// or false when raw is not a string.
func String(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if s := raw[1 : len(raw)-1]; isPlain(s) {
		return string(s), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// Plain reports whether a member name as Next returns it holds no escape and only
// ASCII, so that it is the name it decodes to.
func Plain(name []byte) bool { return isPlain(name) }

// isPlain reports whether the bytes of a JSON string hold no escape and only ASCII,
// so that they are what they decode to.
func isPlain(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiEqualFold reports whether a and b, both ASCII, are equal but for the case of
// their letters.
func asciiEqualFold(a []byte, b string) bool {
	for i := range len(a) {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x|0x20 != y|0x20 || x|0x20 < 'a' || x|0x20 > 'z' {
			return false
		}
	}
	return true
}

// skipSpace returns the index of the first byte of d from i on that is not JSON
// white space.
func skipSpace(d []byte, i int) int {
	for i < len(d) {
		switch d[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string that starts at d[i] (a quote).
func skipString(d []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(d[i:], '"')
		if j < 0 {
			return len(d)
		}
		i += j
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for k := i - 1; k >= 0 && d[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index just past the value that starts at d[i].
func skipValue(d []byte, i int) int {
	if i >= len(d) {
		return i
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				i = skipString(d, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(d) { // a number, true, false or null
		switch d[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// MayHave reports whether data, any bytes, can hold an object member that
// encoding/json decodes into a struct field named field (ASCII letters only), at
// any depth. It is a sound pre-filter: when it reports false, no decode of data
// finds such a member, so the decode can be skipped. A member name is a JSON
// string; the only escape that can stand for a letter is \u, and the only runes
// beyond ASCII that encoding/json folds to an ASCII letter are the dotless ı (to
// i), the long ſ (to s) and the Kelvin sign (to k). So without \u, and without
// bytes beyond ASCII when field has an i, s or k, such a member is written as
// the field's letters in either case, between quotes.
func MayHave(data []byte, field string) bool {
	if bytes.Contains(data, []byte(`\u`)) {
		return true
	}
	if strings.ContainsAny(field, "iIsSkK") && hasNonASCII(data) {
		return true
	}
	n := len(field)
	for i := 0; i+n+1 < len(data); {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return false
		}
		i += j
		if i+n+1 < len(data) && data[i+n+1] == '"' && asciiEqualFold(data[i+1:i+n+1], field) {
			return true
		}
		i++
	}
	return false
}

// hasNonASCII reports whether b holds a byte beyond ASCII.
func hasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}
