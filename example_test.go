package idempotency_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
)

func ExampleValidateKey() {
	for _, key := range []string{
		"0123456789abcdef0123456789abcdef",
		"order:2025-06-01:4f9c2b7e",
		"retry-1",
		"my key with spaces",
		strings.Repeat("a", 300) + "\n",
	} {
		err := idempotency.ValidateKey(key)
		switch {
		case err == nil:
			fmt.Printf("%.20q: ok\n", key)
		case errors.Is(err, idempotency.ErrKeyTooShort):
			fmt.Printf("%.20q: too short\n", key)
		case errors.Is(err, idempotency.ErrKeyTooLong):
			fmt.Printf("%.20q: too long\n", key)
		case errors.Is(err, idempotency.ErrKeyInvalidCharacter):
			fmt.Printf("%.20q: invalid character\n", key)
		}
	}
	// Output:
	// "0123456789abcdef0123": ok
	// "order:2025-06-01:4f9": ok
	// "retry-1": too short
	// "my key with spaces": invalid character
	// "aaaaaaaaaaaaaaaaaaaa": too long
}

// A server reads the key from the message's own metadata, as encoding/json decoded it.
// A key is honoured whether or not the message lists the extension.
func ExampleKeyOf() {
	for _, body := range []string{
		`{"messageId":"m1","metadata":{"a2a-rust.com/idempotency-key":"0123456789abcdef0123456789abcdef"}}`,
		`{"messageId":"m2","metadata":{"trace":"abc"}}`,
		`{"messageId":"m3"}`,
		`{"messageId":"m4","metadata":{"a2a-rust.com/idempotency-key":12345678901234567890}}`,
		`{"messageId":"m5","metadata":{"a2a-rust.com/idempotency-key":"short"}}`,
	} {
		var msg struct {
			MessageID string `json:"messageId"`
			Metadata  any    `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(body), &msg); err != nil {
			log.Fatal(err)
		}
		key, ok, err := idempotency.KeyOf(msg.Metadata)
		switch {
		case errors.Is(err, idempotency.ErrKeyNotString):
			fmt.Println(msg.MessageID, "refused: not a string")
		case err != nil:
			fmt.Println(msg.MessageID, "refused: malformed")
		case !ok:
			fmt.Println(msg.MessageID, "unkeyed")
		default:
			fmt.Println(msg.MessageID, "keyed", idempotency.RedactKey(key))
		}
	}
	// Output:
	// m1 keyed 0123…(32)
	// m2 unkeyed
	// m3 unkeyed
	// m4 refused: not a string
	// m5 refused: malformed
}

// A client keys a send: the key goes into the message's metadata, next to what is
// already there, and the extension is declared once.
func ExampleSetKey() {
	metadata := map[string]any{"trace": "abc"}
	extensions := []string{"https://example.com/ext/v1"}

	metadata, extensions, err := idempotency.SetKey(metadata, extensions, "0123456789abcdef0123456789abcdef")
	if err != nil {
		log.Fatal(err)
	}
	out, err := json.MarshalIndent(map[string]any{"metadata": metadata, "extensions": extensions}, "", "  ")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))

	_, _, err = idempotency.SetKey(metadata, extensions, "too short")
	fmt.Println(errors.Is(err, idempotency.ErrKeyTooShort))
	// Output:
	// {
	//   "extensions": [
	//     "https://example.com/ext/v1",
	//     "https://a2a-rust.com/extensions/idempotency/v1"
	//   ],
	//   "metadata": {
	//     "a2a-rust.com/idempotency-key": "0123456789abcdef0123456789abcdef",
	//     "trace": "abc"
	//   }
	// }
	// true
}

func ExampleNewKey() {
	key := idempotency.NewKey()
	fmt.Println(len(key), idempotency.ValidateKey(key))
	// Output: 32 <nil>
}

func ExampleRedactKey() {
	fmt.Println(idempotency.RedactKey("0123456789abcdef0123456789abcdef"))
	// Output: 0123…(32)
}

// Keys live 24 hours unless configured otherwise, and never less than the operator
// keeps finished tasks: a retry must find the key while its task still exists.
func ExampleRetentionPolicy_EffectiveKeyMaxAge() {
	for _, p := range []idempotency.RetentionPolicy{
		{},
		{KeyMaxAge: 6 * time.Hour},
		{KeyMaxAge: 6 * time.Hour, TerminalTaskRetention: 7 * 24 * time.Hour},
		{KeyMaxAge: -1},
	} {
		age, on := p.EffectiveKeyMaxAge()
		fmt.Println(age, on)
	}
	// Output:
	// 24h0m0s true
	// 6h0m0s true
	// 168h0m0s true
	// 0s false
}
