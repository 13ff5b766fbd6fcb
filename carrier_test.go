package idempotency_test

import (
	"errors"
	"testing"

	"github.com/a2akit/idempotency"
)

func TestKeyOfSend(t *testing.T) {
	good, other := "0123456789abcdef0123", "fedcba9876543210fedc"
	tests := []struct {
		name    string
		meta    string
		metaErr error
		header  []string
		want    string
		wantErr error
	}{
		{name: "neither", want: ""},
		{name: "metadata alone", meta: good, want: good},
		{name: "header alone", header: []string{good}, want: good},
		{name: "header quoted", header: []string{` "` + good + `" `}, want: good},
		{name: "both agree", meta: good, header: []string{good}, want: good},
		{name: "both disagree", meta: good, header: []string{other}, wantErr: idempotency.ErrKeyCarriersDisagree},
		{name: "header too short", header: []string{"short"}, wantErr: idempotency.ErrKeyTooShort},
		{name: "header empty", header: []string{""}, wantErr: idempotency.ErrKeyTooShort},
		{name: "header bad character", meta: good, header: []string{good + "/x"}, wantErr: idempotency.ErrKeyInvalidCharacter},
		{name: "header repeated", header: []string{good, good}, wantErr: idempotency.ErrKeyHeaderRepeated},
		// The order: repeated header, metadata's error, header's error, disagreement.
		{name: "repeated before metadata error", metaErr: idempotency.ErrKeyNotString, header: []string{good, other},
			wantErr: idempotency.ErrKeyHeaderRepeated},
		{name: "metadata error before header error", metaErr: idempotency.ErrKeyNotString, header: []string{"short"},
			wantErr: idempotency.ErrKeyNotString},
		{name: "metadata error alone", metaErr: idempotency.ErrKeyTooLong, wantErr: idempotency.ErrKeyTooLong},
		{name: "header error before disagreement", meta: good, header: []string{"short"}, wantErr: idempotency.ErrKeyTooShort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, ok, err := idempotency.KeyOfSend(tt.meta, tt.metaErr, tt.header)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || ok || key != "" {
					t.Fatalf("got (%q, %v, %v), want error %v", key, ok, err, tt.wantErr)
				}
				return
			}
			if err != nil || key != tt.want || ok != (tt.want != "") {
				t.Fatalf("got (%q, %v, %v), want %q", key, ok, err, tt.want)
			}
		})
	}
}
