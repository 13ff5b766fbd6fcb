package idempotency_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/a2akit/idempotency"
)

// keyErrors are the errors ValidateKey may return.
var keyErrors = []error{idempotency.ErrKeyTooShort, idempotency.ErrKeyTooLong, idempotency.ErrKeyInvalidCharacter}

// wantKeyErr fails t unless err wraps want (or both are nil) and wraps none of the
// other key errors.
func wantKeyErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("%s = %v; want nil", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Errorf("%s = %v; want %v", what, err, want)
	}
	for _, other := range keyErrors {
		if !errors.Is(want, other) && errors.Is(err, other) {
			t.Errorf("%s = %v; it also matches %v", what, err, other)
		}
	}
}

func TestValidateKey(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want error
	}{
		{"empty", "", idempotency.ErrKeyTooShort},
		{"one byte", "1", idempotency.ErrKeyTooShort},
		{"15 bytes", strings.Repeat("a", 15), idempotency.ErrKeyTooShort},
		{"16 bytes", strings.Repeat("a", 16), nil},
		{"255 bytes", strings.Repeat("Z", 255), nil},
		{"256 bytes", strings.Repeat("9", 256), idempotency.ErrKeyTooLong},
		{"short with a bad character is too short", "abc/def", idempotency.ErrKeyTooShort},
		{"300 bytes with a newline is too long", strings.Repeat("a", 150) + "\n" + strings.Repeat("a", 149), idempotency.ErrKeyTooLong},
		{"length counts bytes: 8 × 'é' is 16 bytes", strings.Repeat("é", 8), idempotency.ErrKeyInvalidCharacter},
		{"length counts bytes: 7 × 'é' is 14 bytes", strings.Repeat("é", 7), idempotency.ErrKeyTooShort},
		{"length counts bytes: 128 × 'é' is 256 bytes", strings.Repeat("é", 128), idempotency.ErrKeyTooLong},
		{"trailing newline", "0123456789abcdef\n", idempotency.ErrKeyInvalidCharacter},
		{"CRLF", "0123456789abcdef\r\n", idempotency.ErrKeyInvalidCharacter},
		{"space", "0123456789 abcdef", idempotency.ErrKeyInvalidCharacter},
		{"tab", "0123456789\tabcdef", idempotency.ErrKeyInvalidCharacter},
		{"NUL", "0123456789\x00abcdef", idempotency.ErrKeyInvalidCharacter},
		{"slash", "0123456789/abcdef", idempotency.ErrKeyInvalidCharacter},
		{"é", "0123456789abcdefé", idempotency.ErrKeyInvalidCharacter},
		{"standard base64 plus", "0123456789+abcdef", idempotency.ErrKeyInvalidCharacter},
		{"standard base64 padding", "0123456789abcdef==", idempotency.ErrKeyInvalidCharacter},
		{"DEL", "0123456789abcdef\x7f", idempotency.ErrKeyInvalidCharacter},
		{"high byte", "0123456789abcdef\xff", idempotency.ErrKeyInvalidCharacter},
		{"separators", "a-b_c.d:e-f_g.h:i", nil},
		{"only separators", "-_.:-_.:-_.:-_.:", nil},
		{"letters and digits", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", nil},
		{"UUID", "123e4567-e89b-12d3-a456-426614174000", nil},
		{"URL-safe base64 of 16 bytes", "AbCdEfGhIjKlMn-_QrStUv", nil},
		{"namespaced", "tenant-a:order:4f9c2b7e1d3a5c6b", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantKeyErr(t, "ValidateKey", idempotency.ValidateKey(tt.key), tt.want)
		})
	}
}

// Every byte outside the key alphabet is refused, and every byte inside it accepted.
func TestValidateKeyAlphabet(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.:"
	for b := range 256 {
		key := "0123456789abcde" + string([]byte{byte(b)})
		want := idempotency.ErrKeyInvalidCharacter
		if strings.IndexByte(alphabet, byte(b)) >= 0 {
			want = nil
		}
		wantKeyErr(t, "ValidateKey(key ending in byte "+hex.EncodeToString([]byte{byte(b)})+")", idempotency.ValidateKey(key), want)
	}
}

// The refusals say what to do, since the middleware passes them to the client.
func TestKeyErrorsSayWhatToDo(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want []string
	}{
		{idempotency.ErrKeyTooShort, []string{"16 bytes", "random", "CSPRNG"}},
		{idempotency.ErrKeyTooLong, []string{"255 bytes"}},
		{idempotency.ErrKeyInvalidCharacter, []string{"letters", "digits", "'-'", "'_'", "'.'", "':'"}},
		{idempotency.ErrKeyNotString, []string{idempotency.MetadataKey, "JSON string"}},
	} {
		for _, w := range tt.want {
			if !strings.Contains(tt.err.Error(), w) {
				t.Errorf("%q does not mention %q", tt.err, w)
			}
		}
	}
}

func TestKeyOf(t *testing.T) {
	const valid = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name     string
		metadata any
		key      string
		ok       bool
		err      error
	}{
		{"no metadata", nil, "", false, nil},
		{"nil map", map[string]any(nil), "", false, nil},
		{"empty object", map[string]any{}, "", false, nil},
		{"other entries only", map[string]any{"trace": "abc", "n": 1.0}, "", false, nil},
		{"metadata is a string", "a2a-rust.com/idempotency-key", "", false, nil},
		{"metadata is an array", []any{valid}, "", false, nil},
		{"metadata is a number", 42.0, "", false, nil},
		{"name in another case", map[string]any{"A2A-Rust.com/Idempotency-Key": valid}, "", false, nil},
		{"valid key", map[string]any{idempotency.MetadataKey: valid}, valid, true, nil},
		{"valid key among others", map[string]any{"trace": "abc", idempotency.MetadataKey: valid}, valid, true, nil},
		{"number", map[string]any{idempotency.MetadataKey: 1234567890123456.0}, "", false, idempotency.ErrKeyNotString},
		{"null", map[string]any{idempotency.MetadataKey: nil}, "", false, idempotency.ErrKeyNotString},
		{"object", map[string]any{idempotency.MetadataKey: map[string]any{"key": valid}}, "", false, idempotency.ErrKeyNotString},
		{"array", map[string]any{idempotency.MetadataKey: []any{valid}}, "", false, idempotency.ErrKeyNotString},
		{"bool", map[string]any{idempotency.MetadataKey: true}, "", false, idempotency.ErrKeyNotString},
		{"json.Number", map[string]any{idempotency.MetadataKey: json.Number("1234567890123456")}, "", false, idempotency.ErrKeyNotString},
		{"empty string", map[string]any{idempotency.MetadataKey: ""}, "", false, idempotency.ErrKeyTooShort},
		{"short", map[string]any{idempotency.MetadataKey: "abc"}, "", false, idempotency.ErrKeyTooShort},
		{"long", map[string]any{idempotency.MetadataKey: strings.Repeat("a", 256)}, "", false, idempotency.ErrKeyTooLong},
		{"bad character", map[string]any{idempotency.MetadataKey: valid + "/"}, "", false, idempotency.ErrKeyInvalidCharacter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, ok, err := idempotency.KeyOf(tt.metadata)
			if key != tt.key || ok != tt.ok {
				t.Errorf("KeyOf = %q, %t, %v; want %q, %t", key, ok, err, tt.key, tt.ok)
			}
			switch {
			case tt.err == nil && err != nil:
				t.Errorf("KeyOf error = %v; want nil", err)
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Errorf("KeyOf error = %v; want %v", err, tt.err)
			}
		})
	}
}

// A key is honoured whether or not the message declares the extension: KeyOf reads
// the metadata of a message decoded as the server decodes it, extensions or not.
func TestKeyOfWithoutExtensionURI(t *testing.T) {
	const body = `{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}],
		"metadata":{"a2a-rust.com/idempotency-key":"0123456789abcdef0123456789abcdef"}}`
	var msg struct {
		Metadata   map[string]any `json:"metadata"`
		Extensions []string       `json:"extensions"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatal(err)
	}
	if idempotency.ListsExtension(msg.Extensions) {
		t.Fatal("the message declares the extension; the test needs one that does not")
	}
	key, ok, err := idempotency.KeyOf(msg.Metadata)
	if err != nil || !ok || key != "0123456789abcdef0123456789abcdef" {
		t.Errorf("KeyOf = %q, %t, %v; want the key", key, ok, err)
	}
}

func TestSetKeyRefusesMalformedKeyAndChangesNothing(t *testing.T) {
	for _, key := range []string{"", "short", strings.Repeat("a", 256), "0123456789abcdef/"} {
		meta := map[string]any{"trace": "abc", idempotency.MetadataKey: "old-key-0123456789"}
		exts := make([]string, 1, 4)
		exts[0] = "https://example.com/ext/v1"
		spare := exts[:cap(exts)]

		gotMeta, gotExts, err := idempotency.SetKey(meta, exts, key)
		if err == nil || !errors.Is(err, idempotency.ValidateKey(key)) {
			t.Errorf("SetKey(%q) error = %v; want %v", key, err, idempotency.ValidateKey(key))
		}
		if gotMeta != nil || gotExts != nil {
			t.Errorf("SetKey(%q) = %v, %v; want nil results", key, gotMeta, gotExts)
		}
		if len(meta) != 2 || meta["trace"] != "abc" || meta[idempotency.MetadataKey] != "old-key-0123456789" {
			t.Errorf("SetKey(%q) changed the metadata to %v", key, meta)
		}
		if !slices.Equal(spare, []string{"https://example.com/ext/v1", "", "", ""}) {
			t.Errorf("SetKey(%q) wrote into the extensions' array: %q", key, spare)
		}
	}
}

func TestSetKey(t *testing.T) {
	key := idempotency.NewKey()
	const other = "https://example.com/ext/v1"
	tests := []struct {
		name     string
		metadata any
		exts     []string
		wantMeta map[string]any
		wantExts []string
	}{
		{"nil metadata, no extensions", nil, nil,
			map[string]any{idempotency.MetadataKey: key}, []string{idempotency.ExtensionURI}},
		{"nil map", map[string]any(nil), nil,
			map[string]any{idempotency.MetadataKey: key}, []string{idempotency.ExtensionURI}},
		{"metadata is a string", "not an object", nil,
			map[string]any{idempotency.MetadataKey: key}, []string{idempotency.ExtensionURI}},
		{"metadata is an array", []any{"x"}, nil,
			map[string]any{idempotency.MetadataKey: key}, []string{idempotency.ExtensionURI}},
		{"other entries kept", map[string]any{"trace": "abc", "n": 1.0}, nil,
			map[string]any{"trace": "abc", "n": 1.0, idempotency.MetadataKey: key}, []string{idempotency.ExtensionURI}},
		{"old key overwritten", map[string]any{idempotency.MetadataKey: "old-key-0123456789"}, nil,
			map[string]any{idempotency.MetadataKey: key}, []string{idempotency.ExtensionURI}},
		{"non-string key overwritten", map[string]any{idempotency.MetadataKey: 42.0}, nil,
			map[string]any{idempotency.MetadataKey: key}, []string{idempotency.ExtensionURI}},
		{"other URIs kept in order", nil, []string{other, "urn:x"},
			map[string]any{idempotency.MetadataKey: key}, []string{other, "urn:x", idempotency.ExtensionURI}},
		{"URI already declared", nil, []string{idempotency.ExtensionURI, other},
			map[string]any{idempotency.MetadataKey: key}, []string{idempotency.ExtensionURI, other}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta, exts, err := idempotency.SetKey(tt.metadata, slices.Clone(tt.exts), key)
			if err != nil {
				t.Fatalf("SetKey: %v", err)
			}
			if !equalMeta(meta, tt.wantMeta) {
				t.Errorf("metadata = %v; want %v", meta, tt.wantMeta)
			}
			if !slices.Equal(exts, tt.wantExts) {
				t.Errorf("extensions = %q; want %q", exts, tt.wantExts)
			}
			if got, ok, err := idempotency.KeyOf(meta); got != key || !ok || err != nil {
				t.Errorf("KeyOf(SetKey's metadata) = %q, %t, %v; want the key", got, ok, err)
			}
		})
	}
}

func equalMeta(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// An existing map is updated in place, so a caller holding it sees the key.
func TestSetKeyUpdatesMapInPlace(t *testing.T) {
	meta := map[string]any{"trace": "abc"}
	key := idempotency.NewKey()
	if _, _, err := idempotency.SetKey(meta, nil, key); err != nil {
		t.Fatal(err)
	}
	if meta[idempotency.MetadataKey] != key {
		t.Errorf("the caller's map = %v; want it to hold the key", meta)
	}
}

// Setting a key twice declares the URI once.
func TestSetKeyTwiceDeclaresOnce(t *testing.T) {
	meta, exts, err := idempotency.SetKey(nil, nil, idempotency.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	key := idempotency.NewKey()
	meta, exts, err = idempotency.SetKey(meta, exts, key)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(exts, []string{idempotency.ExtensionURI}) || meta[idempotency.MetadataKey] != key {
		t.Errorf("after two SetKey calls: %v, %q; want the second key and the URI once", meta, exts)
	}
}

// A message keyed with SetKey and sent as JSON is read back by KeyOf on the other
// side, and declares the extension.
func TestSetKeyJSONRoundTrip(t *testing.T) {
	type message struct {
		MessageID  string         `json:"messageId"`
		Metadata   map[string]any `json:"metadata,omitempty"`
		Extensions []string       `json:"extensions,omitempty"`
	}
	key := idempotency.NewKey()
	for _, start := range []map[string]any{nil, {"trace": "abc", "nested": map[string]any{"a": 1.0}}} {
		msg := message{MessageID: "m1", Metadata: start, Extensions: []string{"urn:x"}}
		var err error
		if msg.Metadata, msg.Extensions, err = idempotency.SetKey(msg.Metadata, msg.Extensions, key); err != nil {
			t.Fatal(err)
		}
		body, got := readAsJSON(t, msg)
		if k, ok, err := idempotency.KeyOf(got.Metadata); k != key || !ok || err != nil {
			t.Errorf("KeyOf after a JSON round trip of %s = %q, %t, %v; want the key", body, k, ok, err)
		}
		if !idempotency.ListsExtension(got.Extensions) || !slices.Contains(got.Extensions, "urn:x") {
			t.Errorf("extensions after a JSON round trip of %s = %q; want urn:x and the URI", body, got.Extensions)
		}
	}
}

// wireMessage is the part of a message that the other side of the wire reads the key
// and the extension from.
type wireMessage struct {
	Metadata   any      `json:"metadata"`
	Extensions []string `json:"extensions"`
}

// readAsJSON marshals msg to JSON and reads it back as the other side does; it
// returns the JSON too.
func readAsJSON(t *testing.T, msg any) ([]byte, wireMessage) {
	t.Helper()
	body, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	var got wireMessage
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	return body, got
}

func TestDeclaresExtension(t *testing.T) {
	tests := []struct {
		exts []string
		want bool
	}{
		{nil, false},
		{[]string{}, false},
		{[]string{"urn:x"}, false},
		{[]string{idempotency.ExtensionURI}, true},
		{[]string{"urn:x", idempotency.ExtensionURI}, true},
		{[]string{strings.ToUpper(idempotency.ExtensionURI)}, false},
		{[]string{idempotency.ExtensionURI + "/"}, false},
	}
	for _, tt := range tests {
		if got := idempotency.ListsExtension(tt.exts); got != tt.want {
			t.Errorf("ListsExtension(%q) = %t; want %t", tt.exts, got, tt.want)
		}
	}
}

func TestNewKey(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		key := idempotency.NewKey()
		if err := idempotency.ValidateKey(key); err != nil {
			t.Fatalf("NewKey() = %q: %v", key, err)
		}
		if len(key) != 32 {
			t.Fatalf("NewKey() = %q, %d characters; want 32", key, len(key))
		}
		if b, err := hex.DecodeString(key); err != nil || len(b) != 16 || hex.EncodeToString(b) != key {
			t.Fatalf("NewKey() = %q; want 16 bytes in lower-case hex", key)
		}
		if seen[key] {
			t.Fatalf("NewKey() returned %q twice", key)
		}
		seen[key] = true
	}
}

func TestRedactKey(t *testing.T) {
	tests := []struct{ key, want string }{
		{"", "…"},
		{"abcd", "…"},
		{"abcde", "abcd…(5)"},
		{"0123456789abcdef0123456789abcdef", "0123…(32)"},
	}
	for _, tt := range tests {
		if got := idempotency.RedactKey(tt.key); got != tt.want {
			t.Errorf("RedactKey(%q) = %q; want %q", tt.key, got, tt.want)
		}
	}
	key := idempotency.NewKey()
	if got := idempotency.RedactKey(key); got != key[:4]+"…(32)" || strings.Contains(got, key[4:]) {
		t.Errorf("RedactKey(%q) = %q; want its first four characters and its length", key, got)
	}
}

func TestLogValue(t *testing.T) {
	short := strings.Repeat("t", idempotency.MaxLogValueLength)
	if got := idempotency.LogValue(short); got != short {
		t.Errorf("LogValue(%d bytes) = %q, want it unchanged", len(short), got)
	}
	long := strings.Repeat("é", 4<<20) // 8 MiB of two-byte runes
	got := idempotency.LogValue(long)
	if len(got) > 2*idempotency.MaxLogValueLength || !utf8.ValidString(got) || !strings.Contains(got, "8388608 bytes, sha256:") {
		t.Errorf("LogValue(8 MiB) = %q, want a short valid string naming the length and a digest", got)
	}
	if other := idempotency.LogValue(long + "x"); other == got {
		t.Errorf("two long values log alike: %q", got)
	}
}
