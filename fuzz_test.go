package idempotency_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
)

// refValidateKey is ValidateKey written out plainly: the length bounds, then the
// alphabet, byte by byte.
func refValidateKey(key string) error {
	if len(key) < 16 {
		return idempotency.ErrKeyTooShort
	}
	if len(key) > 255 {
		return idempotency.ErrKeyTooLong
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == ':'
		if !ok {
			return idempotency.ErrKeyInvalidCharacter
		}
	}
	return nil
}

// FuzzValidateKey compares ValidateKey with refValidateKey, and checks that a key it
// accepts survives SetKey, a JSON round trip and KeyOf.
func FuzzValidateKey(f *testing.F) {
	for _, seed := range []string{
		"", "1", strings.Repeat("a", 15), strings.Repeat("a", 16), strings.Repeat("a", 255), strings.Repeat("a", 256),
		strings.Repeat("a", 150) + "\n" + strings.Repeat("a", 149),
		"0123456789abcdef\n", "0123456789abcdef\r\n", "0123456789 abcdef", "0123456789\x00abcdef",
		"0123456789/abcdef", "0123456789abcdefé", strings.Repeat("é", 8), "a-b_c.d:e-f_g.h:i",
		"123e4567-e89b-12d3-a456-426614174000", "AbCdEfGhIjKlMn-_QrStUv", "0123456789abcdef\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		got, want := idempotency.ValidateKey(key), refValidateKey(key)
		switch {
		case want == nil && got != nil:
			t.Fatalf("ValidateKey(%q) = %v; want nil", key, got)
		case want != nil && !errors.Is(got, want):
			t.Fatalf("ValidateKey(%q) = %v; want %v", key, got, want)
		case want != nil:
			return
		}
		meta, exts, err := idempotency.SetKey(nil, nil, key)
		if err != nil {
			t.Fatalf("SetKey(%q): %v", key, err)
		}
		_, msg := readAsJSON(t, map[string]any{"metadata": meta, "extensions": exts})
		if k, ok, err := idempotency.KeyOf(msg.Metadata); k != key || !ok || err != nil {
			t.Fatalf("KeyOf after SetKey and a JSON round trip = %q, %t, %v; want %q", k, ok, err, key)
		}
		if !idempotency.ListsExtension(msg.Extensions) {
			t.Fatalf("extensions after SetKey = %q; want the URI", msg.Extensions)
		}
	})
}

// FuzzKeyOf decodes metadata from JSON as the server does and checks KeyOf against
// what the decoded value holds: no key when it is not an object or lacks the name,
// ErrKeyNotString for a value that is not a string, and ValidateKey's verdict for a
// string.
func FuzzKeyOf(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `[]`, `"x"`, `42`, `{"trace":"abc"}`,
		`{"a2a-rust.com/idempotency-key":"0123456789abcdef"}`,
		`{"a2a-rust.com/idempotency-key":"0123456789abcdef","trace":{"a":[1,2]}}`,
		`{"a2a-rust.com/idempotency-key":1234567890123456}`,
		`{"a2a-rust.com/idempotency-key":null}`,
		`{"a2a-rust.com/idempotency-key":{"k":"0123456789abcdef"}}`,
		`{"a2a-rust.com/idempotency-key":["0123456789abcdef"]}`,
		`{"a2a-rust.com/idempotency-key":true}`,
		`{"a2a-rust.com/idempotency-key":"short"}`,
		`{"a2a-rust.com/idempotency-key":"0123456789abcdef\n"}`,
		`{"a2a-rust.com/idempotency-key":"0123456789abcdef\u00e9"}`,
		`{"a2a-rust.com/idempotency-key":"0123456789\u0000abcdef"}`,
		`{"a2a-rust.com/idempotency-key":"first-key-0123456789","a2a-rust.com/idempotency-key":"second-key-0123456789"}`,
		`{"A2A-Rust.com/Idempotency-Key":"0123456789abcdef"}`,
		`{"a2a-rust.com/idempotency-key":"` + strings.Repeat("a", 256) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var meta any
		if err := json.Unmarshal(data, &meta); err != nil {
			return
		}
		key, ok, err := idempotency.KeyOf(meta)
		m, isMap := meta.(map[string]any)
		v, present := m[idempotency.MetadataKey]
		s, isString := v.(string)
		switch {
		case !isMap || !present:
			if key != "" || ok || err != nil {
				t.Fatalf("KeyOf(%s) = %q, %t, %v; want no key", data, key, ok, err)
			}
		case !isString:
			if key != "" || ok || !errors.Is(err, idempotency.ErrKeyNotString) {
				t.Fatalf("KeyOf(%s) = %q, %t, %v; want ErrKeyNotString", data, key, ok, err)
			}
		case idempotency.ValidateKey(s) != nil:
			if want := idempotency.ValidateKey(s); key != "" || ok || !errors.Is(err, want) {
				t.Fatalf("KeyOf(%s) = %q, %t, %v; want %v", data, key, ok, err, want)
			}
		default:
			if key != s || !ok || err != nil {
				t.Fatalf("KeyOf(%s) = %q, %t, %v; want %q", data, key, ok, err, s)
			}
		}
	})
}
