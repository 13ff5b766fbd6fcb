package grpcbinding

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2akit/idempotency"
)

// keyOf reads the idempotency key of a gRPC send from its message's own metadata,
// with the rules of [idempotency.KeyOf]: no metadata or no entry is no key, an entry
// that is not a string is [idempotency.ErrKeyNotString], and a string must pass
// [idempotency.ValidateKey].
func keyOf(msg *a2apb.Message) (key string, ok bool, err error) {
	v, present := msg.GetMetadata().GetFields()[idempotency.MetadataKey]
	if !present {
		return "", false, nil
	}
	s, isString := v.GetKind().(*structpb.Value_StringValue)
	if !isString {
		return "", false, idempotency.ErrKeyNotString
	}
	if err := idempotency.ValidateKey(s.StringValue); err != nil {
		return "", false, err
	}
	return s.StringValue, true, nil
}

// keyMetadata is the request metadata that carries a key beside the message's
// metadata: idempotency.KeyHeader in gRPC's lower case.
var keyMetadata = strings.ToLower(idempotency.KeyHeader)

// keyOfCall reads the key of a gRPC send from both its carriers, the message's
// metadata (keyOf) and the call's "idempotency-key" request metadata, by
// [idempotency.KeyOfSend]: the metadata entry is honoured alone, and when both carry
// a key they must be equal.
func keyOfCall(ctx context.Context, msg *a2apb.Message) (string, bool, error) {
	key, _, err := keyOf(msg)
	if msg == nil {
		return key, key != "", err
	}
	md, _ := metadata.FromIncomingContext(ctx)
	return idempotency.KeyOfSend(key, err, md.Get(keyMetadata))
}

// A2A v1.0's JSON is the ProtoJSON of its protos (the names are the protos' JSON
// names, enums are their names, bytes are base64 and Struct and Value are plain JSON),
// so the JSON the HTTP bindings store and replay, a Message reply in the index or a
// task read through [middleware.TaskSource], converts to and from a2a-go's a2apb
// types with protojson. wire_test.go checks it field by field against a2a-go's own
// pbconv and encoding/json.

// unmarshalJSON reads A2A v1.0 JSON the way a2a-go's HTTP handlers do: fields it does
// not know are ignored.
var unmarshalJSON = protojson.UnmarshalOptions{DiscardUnknown: true}

// fromJSON decodes the A2A v1.0 JSON raw into a new T.
func fromJSON[T any, P interface {
	*T
	proto.Message
}](raw []byte) (P, error) {
	m := P(new(T))
	if err := unmarshalJSON.Unmarshal(raw, m); err != nil {
		return nil, fmt.Errorf("grpcbinding: decode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	return m, nil
}

// marshalJSON returns m as compact A2A v1.0 JSON, the form a Message reply is bound
// in. protojson varies its whitespace from run to run on purpose; compacting it makes
// the bytes stable, so that binding the same reply twice is idempotent.
func marshalJSON(m proto.Message) ([]byte, error) {
	raw, err := protojson.Marshal(m)
	if err == nil {
		var buf bytes.Buffer
		if err = json.Compact(&buf, raw); err == nil {
			return buf.Bytes(), nil
		}
	}
	return nil, fmt.Errorf("grpcbinding: encode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
}
