package idempotency

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
)

// The wire constants of the idempotency extension. They are shared with the Rust SDK
// that defined the extension, so the two interoperate.
const (
	// ExtensionURI identifies the extension in a message's extensions, in the
	// A2A-Extensions header and in an agent card's capabilities.extensions.
	ExtensionURI = "https://a2a-rust.com/extensions/idempotency/v1"

	// MetadataKey is the name under which the key travels in the message's own
	// metadata (params.message.metadata, not the request-level params.metadata).
	MetadataKey = "a2a-rust.com/idempotency-key"

	// KeyHeader is the request header of the IETF Idempotency-Key draft, the second
	// carrier of a key on the HTTP bindings (gRPC: the metadata "idempotency-key").
	// It is honoured alone; when a send carries both it and [MetadataKey], the two
	// must be equal (see [KeyOfSend]).
	KeyHeader = "Idempotency-Key"

	// ReplayedHeader is the response header, set to "true", of every answer to a
	// keyed send that was served from its first attempt instead of running it: a
	// replay of its task or Message reply, an attach to the task's live events, the
	// news that its task is gone (TaskNotFound) or that its reply cannot be
	// replayed. A first send's answer and a refusal (in flight, key reused,
	// malformed, unavailable, full) never carry it. The gRPC binding sends it as
	// header metadata, in lower case ("idempotent-replayed"). The name and value
	// are those Stripe and the Agentic Commerce Protocol use.
	ReplayedHeader = "Idempotent-Replayed"

	// MinKeyLength and MaxKeyLength bound the length of a key, in bytes.
	MinKeyLength = 16
	MaxKeyLength = 255
)

// Errors that report a malformed key. [ValidateKey] and [KeyOf] return them (possibly
// wrapped); compare with errors.Is. Their texts are written for the client that sent
// the key, since the middleware passes them on as the refusal message.
var (
	ErrKeyTooShort = errors.New("idempotency key is too short: it must be at least 16 bytes; " +
		"generate it from at least 16 random bytes of a CSPRNG (hex or URL-safe base64), never from the message content")
	ErrKeyTooLong = errors.New("idempotency key is too long: it must be at most 255 bytes; " +
		"use 16 to 32 random bytes, hex or URL-safe base64 encoded")
	ErrKeyInvalidCharacter = errors.New("idempotency key has an invalid character: " +
		"only ASCII letters, digits, '-', '_', '.' and ':' are accepted; encode random bytes as hex or URL-safe base64")
	ErrKeyNotString = errors.New("idempotency key is not a string: the message metadata entry " +
		MetadataKey + " must be a JSON string of 16 to 255 bytes")
)

// ValidateKey reports whether key is a well-formed idempotency key: 16 to 255 bytes of
// ASCII letters, digits, '-', '_', '.' and ':'. The checks run in this order, and the
// first that fails is returned: [ErrKeyTooShort], [ErrKeyTooLong],
// [ErrKeyInvalidCharacter]. The empty string is too short; a 300-byte key with a
// newline is too long.
//
// A well-formed key is not necessarily a good one: keys should carry at least 16
// random bytes (see [NewKey]). ValidateKey only catches obvious mistakes.
func ValidateKey(key string) error {
	switch {
	case len(key) < MinKeyLength:
		return ErrKeyTooShort
	case len(key) > MaxKeyLength:
		return ErrKeyTooLong
	}
	for i := 0; i < len(key); i++ {
		if !keyByte[key[i]] {
			return ErrKeyInvalidCharacter
		}
	}
	return nil
}

// keyByte[b] reports whether b may appear in a key.
var keyByte = func() (t [256]bool) {
	for b := '0'; b <= '9'; b++ {
		t[b] = true
	}
	for b := 'a'; b <= 'z'; b++ {
		t[b] = true
		t[b-'a'+'A'] = true
	}
	for _, b := range "-_.:" {
		t[b] = true
	}
	return t
}()

// KeyOf reads the idempotency key from a message's metadata, as decoded by
// encoding/json (a JSON object decodes to map[string]any).
//
// No metadata, metadata that is not an object, or an object without [MetadataKey]:
// the message carries no key, and KeyOf returns ("", false, nil). A value that is not
// a JSON string (a number, null, an object) returns [ErrKeyNotString]: it is an error,
// not the absence of a key. A string that fails [ValidateKey] returns that error. A key
// is honoured whether or not the message lists [ExtensionURI] in its extensions, so
// that forgetting to declare the extension never causes a second run.
func KeyOf(metadata any) (key string, ok bool, err error) {
	m, isMap := metadata.(map[string]any)
	if !isMap {
		return "", false, nil
	}
	v, present := m[MetadataKey]
	if !present {
		return "", false, nil
	}
	s, isString := v.(string)
	if !isString {
		return "", false, ErrKeyNotString
	}
	if err := ValidateKey(s); err != nil {
		return "", false, err
	}
	return s, true, nil
}

// SetKey stores key in a message's metadata and declares [ExtensionURI] in its
// extensions, returning the new metadata and extensions.
//
// The key is validated first; when it is malformed, SetKey returns the error from
// [ValidateKey] and nil results, and the caller's values are left unchanged. Metadata
// that is nil or not a map[string]any (a JSON value other than an object) is replaced
// by a new map; an existing map is updated in place, keeping its other entries and
// overwriting a previous key. The URI is appended to extensions only when it is not
// already there, and the other URIs are kept in order.
func SetKey(metadata any, extensions []string, key string) (map[string]any, []string, error) {
	if err := ValidateKey(key); err != nil {
		return nil, nil, err
	}
	m, ok := metadata.(map[string]any)
	if !ok || m == nil {
		m = make(map[string]any, 1)
	}
	m[MetadataKey] = key
	if !ListsExtension(extensions) {
		extensions = append(extensions, ExtensionURI)
	}
	return m, extensions, nil
}

// ListsExtension reports whether extensions (a message's extensions, or the values
// of an A2A-Extensions header) lists [ExtensionURI]. The server never requires the
// declaration; clients use it to tell a peer that the key is meant. Whether an agent
// card declares the extension is adapter.DeclaresExtension.
func ListsExtension(extensions []string) bool {
	return slices.Contains(extensions, ExtensionURI)
}

// NewKey returns a fresh key: 16 bytes from crypto/rand, hex encoded (32 characters).
// Use one key per logical send, and reuse it, with the same message, for every retry
// of that send.
func NewKey() string {
	var b [16]byte
	rand.Read(b[:]) // never fails; see crypto/rand.Read
	return hex.EncodeToString(b[:])
}

// RedactKey shortens a key for logs: the first four characters, then a count of what
// was left out. Full keys are handles to tasks and must not reach logs at info level.
func RedactKey(key string) string {
	if len(key) <= 4 {
		return "…"
	}
	return fmt.Sprintf("%s…(%d)", key[:4], len(key))
}
