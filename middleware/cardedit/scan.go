package cardedit

// The scanner: where the members and elements of a valid JSON card are, read the way
// encoding/json reads them, for the edits to splice between.

import (
	"bytes"
	"encoding/json"

	jsonmember "github.com/a2akit/idempotency/middleware/internal/member"
)

// member is a member of an object: its name, where its name starts, its colon,
// and its value's span.
type member struct {
	name            string
	key, colon, val int
	end             int
}

// is reports whether encoding/json would decode the member into a struct field
// named name (ASCII): names match under Go's case folding.
func (m member) is(name string) bool {
	return bytes.Equal(jsonmember.Fold([]byte(m.name)), jsonmember.Fold([]byte(name)))
}

// members returns the members of the object opening at open, in order. card is
// valid JSON.
func members(card []byte, open int) []member {
	var ms []member
	i := skipWS(card, open+1)
	for card[i] != '}' {
		var m member
		m.key = i
		keyEnd := stringEnd(card, i)
		if bytes.IndexByte(card[i:keyEnd], '\\') < 0 {
			m.name = string(card[i+1 : keyEnd-1])
		} else {
			_ = json.Unmarshal(card[i:keyEnd], &m.name)
		}
		m.colon = skipWS(card, keyEnd)
		m.val = skipWS(card, m.colon+1)
		m.end = valueEnd(card, m.val)
		ms = append(ms, m)
		i = skipWS(card, m.end)
		if card[i] == ',' {
			i = skipWS(card, i+1)
		}
	}
	return ms
}

// span is a value's place in a card.
type span struct{ start, end int }

// elements returns the elements of the array opening at open, in order.
func elements(card []byte, open int) []span {
	var els []span
	i := skipWS(card, open+1)
	for card[i] != ']' {
		end := valueEnd(card, i)
		els = append(els, span{i, end})
		i = skipWS(card, end)
		if card[i] == ',' {
			i = skipWS(card, i+1)
		}
	}
	return els
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the end of the string starting at b[i].
func stringEnd(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd returns the end of the value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[i])) {
		i++
	}
	return i
}
