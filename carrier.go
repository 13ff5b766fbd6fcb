package idempotency

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of a send whose two carriers of a key ([MetadataKey] and [KeyHeader]) do not
// make one key. [KeyOfSend] returns them; a header value that fails [ValidateKey]
// returns that error, wrapped with the header's name. Their texts are written for the
// client, as the middleware passes them on as the refusal message.
var (
	ErrKeyHeaderRepeated = errors.New("the " + KeyHeader + " header is repeated: send it once, " +
		"with the key of the message (or leave it out and send the key in the message metadata " + MetadataKey + ")")
	ErrKeyCarriersDisagree = errors.New("the " + KeyHeader + " header and the message metadata " + MetadataKey +
		" carry different idempotency keys: send one key, in either carrier or the same in both")
)

// KeyOfSend decides the key of a send from its two carriers: metadataKey and
// metadataErr, what [KeyOf] made of the message's metadata ("" and nil when it
// carries no key), and header, the values of the send's [KeyHeader] request header
// (http.Header.Values; on gRPC the "idempotency-key" metadata). The header is
// honoured alone; when both carriers name a key they must be equal.
//
// The checks run in this order, and the first that fails is returned: a header that
// is repeated ([ErrKeyHeaderRepeated]); the metadata's own error; the header's value
// failing [ValidateKey] (wrapped, errors.Is finds the cause); two different keys
// ([ErrKeyCarriersDisagree]). A header value may be an RFC 8941 string (the IETF
// draft's form, in double quotes) or the bare key; surrounding spaces are ignored.
// Without the header, KeyOfSend returns the metadata's reading unchanged.
func KeyOfSend(metadataKey string, metadataErr error, header []string) (key string, ok bool, err error) {
	switch {
	case len(header) > 1:
		return "", false, ErrKeyHeaderRepeated
	case metadataErr != nil:
		return "", false, metadataErr
	case len(header) == 0:
		return metadataKey, metadataKey != "", nil
	}
	h := strings.TrimSpace(header[0])
	if len(h) >= 2 && h[0] == '"' && h[len(h)-1] == '"' {
		h = h[1 : len(h)-1]
	}
	if err := ValidateKey(h); err != nil {
		return "", false, fmt.Errorf("the %s header: %w", KeyHeader, err)
	}
	if metadataKey != "" && metadataKey != h {
		return "", false, ErrKeyCarriersDisagree
	}
	return h, true, nil
}
