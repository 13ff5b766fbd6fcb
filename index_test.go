package idempotency_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
)

func TestEffectiveKeyMaxAge(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		name string
		p    idempotency.RetentionPolicy
		want time.Duration
		ok   bool
	}{
		{"zero policy: the default", idempotency.RetentionPolicy{}, idempotency.DefaultKeyMaxAge, true},
		{"default is 24 hours", idempotency.RetentionPolicy{}, day, true},
		{"set", idempotency.RetentionPolicy{KeyMaxAge: time.Hour}, time.Hour, true},
		{"raised to task retention", idempotency.RetentionPolicy{KeyMaxAge: time.Hour, TerminalTaskRetention: 2 * day}, 2 * day, true},
		{"equal to task retention", idempotency.RetentionPolicy{KeyMaxAge: 2 * day, TerminalTaskRetention: 2 * day}, 2 * day, true},
		{"above task retention: kept", idempotency.RetentionPolicy{KeyMaxAge: 3 * day, TerminalTaskRetention: 2 * day}, 3 * day, true},
		{"default raised to task retention", idempotency.RetentionPolicy{TerminalTaskRetention: 7 * day}, 7 * day, true},
		{"default above task retention", idempotency.RetentionPolicy{TerminalTaskRetention: time.Hour}, day, true},
		{"negative disables", idempotency.RetentionPolicy{KeyMaxAge: -1}, 0, false},
		{"negative disables whatever the task retention", idempotency.RetentionPolicy{KeyMaxAge: -time.Hour, TerminalTaskRetention: day}, 0, false},
		{"negative task retention ignored", idempotency.RetentionPolicy{KeyMaxAge: time.Hour, TerminalTaskRetention: -day}, time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.p.EffectiveKeyMaxAge()
			if got != tt.want || ok != tt.ok {
				t.Errorf("%+v.EffectiveKeyMaxAge() = %v, %t; want %v, %t", tt.p, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestEffectiveBatchSize(t *testing.T) {
	tests := []struct{ size, want int }{
		{0, idempotency.DefaultPurgeBatchSize},
		{-5, idempotency.DefaultPurgeBatchSize},
		{1, 1},
		{50, 50},
		{100000, 100000},
	}
	for _, tt := range tests {
		p := idempotency.RetentionPolicy{BatchSize: tt.size}
		if got := p.EffectiveBatchSize(); got != tt.want {
			t.Errorf("RetentionPolicy{BatchSize: %d}.EffectiveBatchSize() = %d; want %d", tt.size, got, tt.want)
		}
	}
	if idempotency.DefaultPurgeBatchSize != 1000 {
		t.Errorf("DefaultPurgeBatchSize = %d; the RetentionPolicy documentation says 1000", idempotency.DefaultPurgeBatchSize)
	}
}

func TestClaimStatusString(t *testing.T) {
	tests := []struct {
		s    idempotency.ClaimStatus
		want string
	}{
		{idempotency.Claimed, "claimed"},
		{idempotency.HeldBySameMessage, "held by same message"},
		{idempotency.HeldByOtherMessage, "held by other message"},
		{0, "invalid claim status"},
		{99, "invalid claim status"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("ClaimStatus(%d).String() = %q; want %q", int(tt.s), got, tt.want)
		}
	}
	// The zero ClaimStatus is not a valid outcome, so a zero Claim is never "claimed".
	if (idempotency.Claim{}).Status == idempotency.Claimed {
		t.Error("the zero Claim reports Claimed")
	}
}

func TestRecordPending(t *testing.T) {
	tests := []struct {
		name string
		r    idempotency.Record
		want bool
	}{
		{"zero", idempotency.Record{}, true},
		{"claimed, nothing bound", idempotency.Record{MessageID: "m", ClaimedAt: time.Unix(1, 0)}, true},
		{"task", idempotency.Record{TaskID: "t"}, false},
		{"reply", idempotency.Record{Reply: []byte(`{}`)}, false},
		{"empty but non-nil reply", idempotency.Record{Reply: []byte{}}, false},
		{"task and reply", idempotency.Record{TaskID: "t", Reply: []byte(`{}`)}, false},
	}
	for _, tt := range tests {
		if got := tt.r.Pending(); got != tt.want {
			t.Errorf("%s: Pending() = %t; want %t", tt.name, got, tt.want)
		}
	}
}

// The index's sentinels are distinct and carry the package prefix, like
// acme/autocert's ErrCacheMiss.
func TestIndexSentinels(t *testing.T) {
	sentinels := []error{idempotency.ErrNotOwner, idempotency.ErrAlreadyBound, idempotency.ErrFull, idempotency.ErrInvalidArgument}
	for i, a := range sentinels {
		if !strings.HasPrefix(a.Error(), "idempotency: ") {
			t.Errorf("%q lacks the package prefix", a)
		}
		for _, b := range sentinels[i+1:] {
			if a.Error() == b.Error() {
				t.Errorf("two sentinels read %q", a)
			}
		}
	}
}

func TestCheckLengths(t *testing.T) {
	at := func(n int) string { return strings.Repeat("x", n) }
	for name, tc := range map[string]struct {
		scope, messageID string
		b                idempotency.Binding
		ok               bool
	}{
		"at the bounds": {at(idempotency.MaxScopeLength), at(idempotency.MaxMessageIDLength),
			idempotency.Binding{TaskID: at(idempotency.MaxTaskIDLength), Reply: make([]byte, idempotency.MaxReplyLength)}, true},
		"empty":            {"", "", idempotency.Binding{}, true},
		"scope too long":   {scope: at(idempotency.MaxScopeLength + 1)},
		"message too long": {messageID: at(idempotency.MaxMessageIDLength + 1)},
		"task id too long": {b: idempotency.Binding{TaskID: at(idempotency.MaxTaskIDLength + 1)}},
		"reply too long":   {b: idempotency.Binding{Reply: make([]byte, idempotency.MaxReplyLength+1)}},
		"4 MiB scope":      {scope: at(4 << 20)},
		"1 MiB message id": {messageID: at(1 << 20)},
	} {
		err := idempotency.CheckLengths(tc.scope, tc.messageID, tc.b)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, idempotency.ErrInvalidArgument)) {
			t.Errorf("%s: CheckLengths = %v, want ok=%v or ErrInvalidArgument", name, err, tc.ok)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("%s: the error repeats the value: %d bytes", name, len(err.Error()))
		}
	}
}

// TestRandomToken checks what indexes rely on: never zero, 63 bits (positive as a
// signed 64-bit integer), and distinct across draws.
func TestRandomToken(t *testing.T) {
	seen := make(map[idempotency.Token]bool)
	for range 1000 {
		tok := idempotency.RandomToken()
		if tok == 0 || int64(tok) < 0 {
			t.Fatalf("RandomToken() = %d; want in [1, 2^63)", tok)
		}
		if seen[tok] {
			t.Fatalf("RandomToken() returned %d twice", tok)
		}
		seen[tok] = true
	}
}
