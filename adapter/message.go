package adapter

import (
	"errors"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
)

// SetMessageKey puts key in msg's own metadata (under [idempotency.MetadataKey]) and
// lists [idempotency.ExtensionURI] in msg's extensions, which is how a client marks a
// send as keyed. msg must not be nil.
//
// The key is validated first: when it is malformed, SetMessageKey returns the error
// from [idempotency.ValidateKey] (compare with errors.Is) and leaves msg unchanged.
// Otherwise it keeps msg's other metadata entries and extensions, and replaces a key
// msg already carried. Use one fresh key ([NewKey]) per logical send, and resend the
// same message (same messageId, same key) on every retry of that send; never give a
// message that was already sent a different key.
func SetMessageKey(msg *a2a.Message, key string) error {
	metadata, extensions, err := idempotency.SetKey(msg.Metadata, msg.Extensions, key)
	if err != nil {
		return err
	}
	msg.Metadata, msg.Extensions = metadata, extensions
	return nil
}

// MessageKey reads the idempotency key from msg's own metadata, the way the
// middleware reads it from the request. A nil msg, or a message without the metadata
// entry, carries no key: ("", false, nil). An entry that is not a well-formed string
// returns the error the middleware would refuse the send with
// ([idempotency.ErrKeyNotString], [idempotency.ErrKeyTooShort], ...).
func MessageKey(msg *a2a.Message) (key string, ok bool, err error) {
	if msg == nil || msg.Metadata == nil {
		return "", false, nil
	}
	return idempotency.KeyOf(msg.Metadata)
}

// ExtensionDescription is the description [DeclareExtension] gives the extension.
const ExtensionDescription = "Idempotent sends: a message that carries a key under " +
	idempotency.MetadataKey + " in its own metadata runs at most once; a retry with the same " +
	"key and messageId gets the task (or Message) of the first attempt."

// ErrCardSigned is returned by [DeclareExtension] for a card that already carries
// signatures and does not declare the extension: adding it would invalidate them.
var ErrCardSigned = errors.New("adapter: agent card is already signed; declare the idempotency extension before signing it")

// DeclareExtension declares [idempotency.ExtensionURI] in card's
// capabilities.extensions, as optional (Required false), with [ExtensionDescription].
// Clients such as package keyedclient retry keyed sends only against a peer whose card
// declares it.
//
// The middleware declares the extension itself on the card it serves, but it cannot
// change a signed card without breaking its signatures; an operator who signs the card
// calls DeclareExtension before signing. A card that already lists the URI, in any
// form, is left alone (an operator's own entry wins) and DeclareExtension returns nil.
// A card that does not list it and already carries signatures is left unchanged, and
// DeclareExtension returns [ErrCardSigned]. card must not be nil.
func DeclareExtension(card *a2a.AgentCard) error {
	if DeclaresExtension(card) {
		return nil
	}
	if len(card.Signatures) > 0 {
		return ErrCardSigned
	}
	card.Capabilities.Extensions = append(card.Capabilities.Extensions, a2a.AgentExtension{
		URI:         idempotency.ExtensionURI,
		Description: ExtensionDescription,
		Required:    false,
	})
	return nil
}

// DeclaresExtension reports whether card lists [idempotency.ExtensionURI] in its
// capabilities.extensions. A nil card declares nothing.
func DeclaresExtension(card *a2a.AgentCard) bool {
	if card == nil {
		return false
	}
	return slices.ContainsFunc(card.Capabilities.Extensions, func(e a2a.AgentExtension) bool {
		return e.URI == idempotency.ExtensionURI
	})
}
