// Package cardedit edits an A2A agent card as bytes: it changes the members it is
// asked to change and copies every other byte of the card as the server wrote it,
// so member order, formatting, unknown members and escapes survive. The middleware
// uses it to list the idempotency extension; the sidecar (cmd/a2a-idempotency-proxy)
// uses it to point the card's interfaces at its public URL; a card handler or proxy
// of your own can do either. It imports the standard library only.
//
// Members are found the way encoding/json (and so a2a-go's client) finds them:
// names match case-insensitively, with Go's folding, and of duplicate members the
// last one wins. An edit is made where a Go client will read it.
package cardedit

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Outcome says what AddExtension did.
type Outcome int

const (
	// Added: the entry was inserted.
	Added Outcome = iota + 1
	// Listed: capabilities.extensions already lists the URI; the card is unchanged.
	Listed
	// Signed: the card carries signatures and does not list the URI; the card is
	// unchanged, since an insertion would break the signatures.
	Signed
	// Unreadable: the card is not a JSON object, or its capabilities or extensions
	// are not of their type (a Go client could not read them); the card is unchanged.
	Unreadable
)

// AddExtension returns card with entry (a JSON object) appended to the extensions
// a Go client reads: the last capabilities.extensions array. A missing extensions
// member is added at the end of the last capabilities object, a missing
// capabilities member at the end of the card; a null one is replaced. The entry is
// laid out like its neighbours (indented to their depth when the card is
// pretty-printed); every other byte of card is kept. When the outcome is not Added
// the card is returned as it is.
func AddExtension(card []byte, uri string, entry []byte) ([]byte, Outcome) {
	e, outcome := planExtension(card, uri, entry)
	if outcome != Added {
		return card, outcome
	}
	return e.apply(card), Added
}

// planExtension returns the edit AddExtension makes.
func planExtension(card []byte, uri string, entry []byte) (edit, Outcome) {
	var item bytes.Buffer
	if json.Compact(&item, entry) != nil || !json.Valid(card) {
		return edit{}, Unreadable
	}
	top := skipWS(card, 0)
	if card[top] != '{' {
		return edit{}, Unreadable
	}
	var capsObjects []member
	var capsNull *member
	signed := false
	for _, m := range members(card, top) {
		switch {
		case m.is("capabilities"):
			switch card[m.val] {
			case '{':
				capsObjects = append(capsObjects, m)
			case 'n':
				capsNull = &m
			default:
				return edit{}, Unreadable
			}
		case m.is("signatures"):
			signed = signed || (card[m.val] == '[' && len(elements(card, m.val)) > 0)
		}
	}
	// The extensions a Go client reads: every capabilities object is decoded into
	// the same struct, so the last extensions member of any of them wins.
	var exts *member
	for _, c := range capsObjects {
		for _, m := range members(card, c.val) {
			if m.is("extensions") {
				if card[m.val] != '[' && card[m.val] != 'n' {
					return edit{}, Unreadable
				}
				exts = &m
			}
		}
	}
	if exts != nil && card[exts.val] == '[' {
		for _, el := range elements(card, exts.val) {
			var ext struct {
				URI string `json:"uri"`
			}
			if json.Unmarshal(card[el.start:el.end], &ext) != nil {
				return edit{}, Unreadable
			}
			if ext.URI == uri {
				return edit{}, Listed
			}
		}
	}
	if signed {
		return edit{}, Signed
	}
	st := detectStyle(card, top)
	switch {
	case exts != nil && card[exts.val] == '[':
		return st.insert(card, exts.val, item.Bytes()), Added
	case exts != nil:
		return st.replace(card, exts.val, exts.end, "["+item.String()+"]"), Added
	case len(capsObjects) > 0:
		return st.insert(card, capsObjects[len(capsObjects)-1].val, []byte(`"extensions":[`+item.String()+`]`)), Added
	case capsNull != nil:
		return st.replace(card, capsNull.val, capsNull.end, `{"extensions":[`+item.String()+`]}`), Added
	default:
		return st.insert(card, top, []byte(`"capabilities":{"extensions":[`+item.String()+`]}`)), Added
	}
}

// RewriteInterfaceURLs returns card with every interface URL replaced by
// rewrite(url): the url of each supportedInterfaces[] element (A2A v1.0), and the
// top-level url and each additionalInterfaces[].url (A2A v0.3). Every duplicate
// of those members is rewritten, so no reader sees an old URL; a URL that rewrite
// returns unchanged keeps its bytes, as does everything else in the card. ok is
// false, and out nil, when card is not a JSON object.
//
// The sidecar points a card at its public URL with
//
//	out, ok := cardedit.RewriteInterfaceURLs(card, func(string) string { return publicURL })
func RewriteInterfaceURLs(card []byte, rewrite func(url string) string) (out []byte, ok bool) {
	if !json.Valid(card) {
		return nil, false
	}
	top := skipWS(card, 0)
	if card[top] != '{' {
		return nil, false
	}
	var edits []edit
	replaceURL := func(m member) {
		var old string
		if card[m.val] != '"' || json.Unmarshal(card[m.val:m.end], &old) != nil {
			return
		}
		if u := rewrite(old); u != old {
			edits = append(edits, edit{at: m.val, del: m.end - m.val, text: quote(u)})
		}
	}
	for _, m := range members(card, top) {
		switch {
		case m.is("url"):
			replaceURL(m)
		case (m.is("supportedInterfaces") || m.is("additionalInterfaces")) && card[m.val] == '[':
			for _, el := range elements(card, m.val) {
				if card[el.start] != '{' {
					continue
				}
				for _, f := range members(card, el.start) {
					if f.is("url") {
						replaceURL(f)
					}
				}
			}
		}
	}
	out = card
	for _, e := range slices.Backward(edits) {
		out = e.apply(out)
	}
	return out, true
}

// quote returns s as a JSON string, without HTML escaping.
func quote(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// edit replaces del bytes at at with text.
type edit struct {
	at, del int
	text    []byte
}

func (e edit) apply(b []byte) []byte {
	out := make([]byte, 0, len(b)-e.del+len(e.text))
	out = append(out, b[:e.at]...)
	out = append(out, e.text...)
	return append(out, b[e.at+e.del:]...)
}

// style is how a card is laid out: pretty-printed (one member or element a line,
// indented by unit a level) or on one line, and the space it puts after a colon
// and, on one line, after a comma.
type style struct {
	pretty        bool
	newline, unit string
	colon, comma  string
}

// lines reads the whitespace that opens a container: whether it breaks the line,
// with which line ending, and the indentation of the line after it.
func lines(lead []byte) (pretty bool, newline, indent string) {
	i := bytes.LastIndexByte(lead, '\n')
	if i < 0 {
		return false, "", ""
	}
	newline = "\n"
	if i > 0 && lead[i-1] == '\r' {
		newline = "\r\n"
	}
	return true, newline, string(lead[i+1:])
}

// detectStyle reads the layout of the card from its top-level object at top.
func detectStyle(card []byte, top int) style {
	var st style
	ms := members(card, top)
	if len(ms) == 0 {
		return st
	}
	st.pretty, st.newline, st.unit = lines(card[top+1 : ms[0].key])
	st.colon = string(card[ms[0].colon+1 : ms[0].val])
	if len(ms) > 1 {
		st.comma = string(card[skipWS(card, ms[0].end)+1 : ms[1].key])
	}
	return st
}

// insert returns the edit that appends item (compact JSON: a value, or a member
// for an object) to the non-null container opening at open.
func (st style) insert(card []byte, open int, item []byte) edit {
	var last, first int = -1, -1
	if card[open] == '{' {
		if ms := members(card, open); len(ms) > 0 {
			first, last = ms[0].key, ms[len(ms)-1].end
		}
	} else if els := elements(card, open); len(els) > 0 {
		first, last = els[0].start, els[len(els)-1].end
	}
	if last < 0 { // empty: write the container anew, with item in it
		end := valueEnd(card, open)
		return st.replace(card, open, end, string(card[open])+string(item)+string(card[end-1]))
	}
	lead := card[open+1 : first]
	text := []byte{','}
	if pretty, newline, indent := lines(lead); pretty {
		if !st.pretty { // a pretty container in a card on one line
			st.unit = "  "
		}
		st.pretty, st.newline = true, newline
		text = append(text, lead...)
		text = st.format(text, item, indent)
	} else {
		text = append(text, st.comma...)
		text = style{colon: st.colon, comma: st.comma}.format(text, item, "")
	}
	return edit{at: last, text: text}
}

// replace returns the edit that writes value (compact JSON) over card[start:end],
// laid out from the indentation of the line it is on.
func (st style) replace(card []byte, start, end int, value string) edit {
	return edit{at: start, del: end - start, text: st.format(nil, []byte(value), lineIndent(card, start))}
}

// format appends compact JSON v to out in the style, its first line continuing
// the current one and every further line starting with base.
func (st style) format(out, v []byte, base string) []byte {
	depth := 0
	newline := func() {
		if st.pretty {
			out = append(out, st.newline...)
			out = append(out, base...)
			for range depth {
				out = append(out, st.unit...)
			}
		}
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '"':
			j := stringEnd(v, i)
			out = append(out, v[i:j]...)
			i = j - 1
		case '{', '[':
			out = append(out, c)
			if v[i+1] == '}' || v[i+1] == ']' {
				out = append(out, v[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			out = append(out, c)
		case ',':
			out = append(out, ',')
			if st.pretty {
				newline()
			} else {
				out = append(out, st.comma...)
			}
		case ':':
			out = append(out, ':')
			out = append(out, st.colon...)
		default:
			out = append(out, c)
		}
	}
	return out
}

// lineIndent returns the spaces and tabs that start the line holding card[i].
func lineIndent(card []byte, i int) string {
	start := bytes.LastIndexByte(card[:i], '\n') + 1
	end := start
	for end < i && (card[end] == ' ' || card[end] == '\t') {
		end++
	}
	return string(card[start:end])
}
